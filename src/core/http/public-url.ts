/**
 * The public base URL (`LAKEPORT_PUBLIC_URL`, else `http://HOST:PORT`). With PORT=0 the real port
 * is known only after listening, so main.ts may settle it once, before serving the first request.
 */
export class PublicUrl {
  private base: string;

  constructor(configured: string | undefined, host: string, port: number) {
    this.base = configured ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  settle(listeningAddress: string) {
    this.base = listeningAddress.replace(/\/+$/, '');
  }

  get value(): string {
    return this.base;
  }

  /** The base URL of a service prefix, e.g. `service('/auth')`. */
  service(prefix: string): string {
    return `${this.base}${prefix}`;
  }
}
