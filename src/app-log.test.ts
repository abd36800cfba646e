import { describe, expect, it } from 'vitest';
import { requestForLog } from './app.ts';

describe('requestForLog', () => {
  it("replaces the OpenID callback's code and state, and keeps everything else", () => {
    const logged = requestForLog({ method: 'GET', url: '/auth/callback?code=abc123&state=xyz&iss=http%3A%2F%2Fidp', hostname: 'h', ip: '127.0.0.1', socket: { remotePort: 5 } });
    expect(logged).toEqual({ method: 'GET', url: '/auth/callback?code=redacted&state=redacted&iss=http%3A%2F%2Fidp', host: 'h', remoteAddress: '127.0.0.1', remotePort: 5 });
    expect(JSON.stringify(logged)).not.toContain('abc123');
    expect(requestForLog({ method: 'GET', url: '/odata/api/v4/x?$top=1' }).url).toBe('/odata/api/v4/x?$top=1');
    expect(requestForLog({ method: 'GET', url: '/healthz' }).url).toBe('/healthz');
  });
});
