import net from 'node:net';

/**
 * A TCP relay on 127.0.0.1 (a free port) to `target`, that can be cut: `cut()` drops every
 * connection through it and refuses new ones (they are accepted and closed at once, as a database
 * that is restarting does) until `restore()`. Between Lakeport's processes and the machine's one
 * PostgreSQL, it stands in for a PostgreSQL restart without touching the server other suites use.
 */
export interface TcpProxy {
  port: number;
  /** Connections relayed so far, and those refused while cut. */
  readonly stats: { connections: number; refused: number };
  /** Drops every connection (a FIN, as a server that closes them; `reset`: an RST, as a host that is gone) until restore(). */
  cut(options?: { reset?: boolean }): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  const stats = { connections: 0, refused: 0 };
  let down = false;
  const server = net.createServer((client) => {
    if (down) {
      stats.refused++;
      client.destroy();
      return;
    }
    stats.connections++;
    const upstream = net.connect(target);
    open.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    stats,
    cut(options = {}) {
      down = true;
      for (const socket of open) {
        if (options.reset) socket.resetAndDestroy();
        else socket.destroy();
      }
      open.clear();
    },
    restore() {
      down = false;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
