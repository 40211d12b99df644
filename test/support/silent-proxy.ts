import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that can go silent: connections stay
 * open but nothing is forwarded either way, as when a network path or a
 * load balancer stops passing packets. What a silenced connection receives
 * is dropped, not delivered later.
 */
export class SilentProxy {
  private readonly server: net.Server;
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private silent = false;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
  ) {
    this.server = server;
  }

  static async start(target: { host: string; port: number }): Promise<SilentProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new SilentProxy(target, (server.address() as net.AddressInfo).port, server);
    server.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  /** A URL like `url` but through this proxy. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    this.pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket) =>
      from.on('data', (chunk) => {
        if (!this.silent) to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  }

  /** Stops forwarding; sockets stay open. */
  silence(): void {
    this.silent = true;
  }

  restore(): void {
    this.silent = false;
  }

  /** Local ports of the connections to PostgreSQL: pg_stat_activity.client_port of the sessions made through here. */
  upstreamPorts(): number[] {
    return [...this.pairs].map(([, upstream]) => upstream.localPort).filter((p): p is number => p !== undefined);
  }

  async close(): Promise<void> {
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
