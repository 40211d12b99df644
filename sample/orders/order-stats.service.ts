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
      // The sum of an int column is a bigint (pg hands it over as a string): as an int it
      // overflowed past 2^31 cents, a few dozen large orders, and the nightly report failed.
      .addSelect('coalesce(sum(o.totalCents), 0)', 'totalCents')
      .getRawOne<{ orders: number; totalCents: string }>();
    return { orders: row?.orders ?? 0, totalCents: Number(row?.totalCents ?? 0) };
  }
}
