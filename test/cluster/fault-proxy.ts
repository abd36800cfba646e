import http from 'node:http';
import type net from 'node:net';

/**
 * What the proxy does to S3 requests while a fault is on: answer `503 SlowDown` (S3's throttling
 * error, XML body) or `stall` (take the request and never answer, until the fault is cleared; the
 * client must time out). `attempts: 'first'` hits only a request's first attempt (the AWS SDK says
 * which in `amz-sdk-request: attempt=N; max=M`), so a client that retries gets through; `'all'`
 * hits every attempt, so only the end of the window lets requests through.
 */
export interface Fault {
  kind: 'slowdown' | 'stall';
  attempts: 'first' | 'all';
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: the S3 endpoint to give Lakeport. */
  endpoint: string;
  /** Requests seen, passed through, and hit by each kind of fault. */
  readonly stats: { requests: number; passed: number; slowdown: number; stall: number };
  /** Turns a fault on (until `clear()`). */
  inject(fault: Fault): void;
  /** Back to passing everything through; requests held by a stall are dropped (their sockets closed). */
  clear(): void;
  close(): Promise<void>;
}

const SLOW_DOWN =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>fault-proxy</RequestId></Error>';

/** An HTTP proxy of our own in front of an S3-compatible server (`upstream`, `http://host:port`), for fault cases. */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const stats = { requests: 0, passed: 0, slowdown: 0, stall: 0 };
  const held = new Set<net.Socket>();
  const sockets = new Set<net.Socket>();
  let fault: Fault | undefined;

  const server = http.createServer((req, res) => {
    stats.requests++;
    const attempt = Number(/attempt=(\d+)/.exec(String(req.headers['amz-sdk-request'] ?? ''))?.[1] ?? 1);
    const hit = fault && (fault.attempts === 'all' || attempt === 1) ? fault.kind : undefined;
    if (hit === 'slowdown') {
      stats.slowdown++;
      // Read the body first, as S3 does, so that the client sees the answer rather than a reset.
      req.resume();
      req.once('end', () => {
        res.writeHead(503, { 'content-type': 'application/xml' });
        res.end(SLOW_DOWN);
      });
      return;
    }
    if (hit === 'stall') {
      stats.stall++;
      held.add(req.socket);
      req.socket.once('close', () => held.delete(req.socket));
      req.resume();
      return;
    }
    stats.passed++;
    const headers = { ...req.headers };
    delete headers.expect;
    const forward = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;

  const dropHeld = () => {
    for (const socket of held) socket.destroy();
    held.clear();
  };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stats,
    inject(next) {
      fault = next;
    },
    clear() {
      fault = undefined;
      dropHeld();
    },
    async close() {
      dropHeld();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
