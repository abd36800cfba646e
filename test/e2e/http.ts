import { expect } from 'vitest';

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * Requests as a script would make them, against the server `current()` returns (read at call time,
 * since tests start their server in beforeAll). Paths are relative to the server; absolute URLs
 * (e.g. a `next_page` link) are used as they are. The body is parsed as JSON when it is JSON.
 */
export function httpApi(current: () => { url: string; adminToken: string }) {
  async function call(method: string, pathOrUrl: string, options: { token?: string; admin?: boolean; json?: unknown } = {}): Promise<Reply> {
    const server = current();
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.admin) headers['x-admin-token'] = server.adminToken;
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : `${server.url}${pathOrUrl}`;
    const response = await fetch(url, { method, headers, body: options.json === undefined ? undefined : JSON.stringify(options.json) });
    const text = await response.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, headers: response.headers, body, text };
  }

  /** Asserts the status, showing the body when it differs, and returns the parsed body. */
  function expectStatus(reply: Reply, status: number): any {
    expect(reply.status, `${reply.status} ${reply.text}`).toBe(status);
    return reply.body;
  }

  /** An account named `Acme` owned by the token's identity and a workspace billed to it, with that identity as owner; the workspace as answered. */
  async function ownWorkspace(token: string, identity: string, workspace: string): Promise<any> {
    const account = expectStatus(await call('POST', '/billing/v1/accounts', { token, json: { name: 'Acme' } }), 201);
    return expectStatus(await call('PUT', `/control/v1/workspaces/${workspace}`, { token, json: { billing_account: account.account_id, members: [{ identity, role: 'owner' }] } }), 200);
  }

  return { call, expectStatus, ownWorkspace };
}
