import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Order } from './order.entity.js';

@Injectable()
export class OrderStats {
  constructor(private readonly dataSource: DataSource) {}

  async totals(): Promise<{ orders: number; totalCents: number }> {
    const row = await this.dataSource
      .getRepository(Order)
      .createQueryBuilder('o')
      .select('count(*)::int', 'orders')
      .addSelect('coalesce(sum(o.totalCents), 0)::int', 'totalCents')
      .getRawOne<{ orders: number; totalCents: number }>();
    return { orders: row?.orders ?? 0, totalCents: row?.totalCents ?? 0 };
  }
}
