import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'sample_order' })
export class Order {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'text' })
  email!: string;

  @Column({ type: 'int' })
  totalCents!: number;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt!: Date;
}
