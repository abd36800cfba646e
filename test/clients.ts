import type { FastifyInstance } from 'fastify';

/** A signed-in identity for route tests: its token and a JSON request helper. */
export interface TestUser {
  identity: string;
  token: string;
  credentialId: string;
  request(method: string, url: string, body?: unknown): Promise<{ statusCode: number; json(): any; body: string; headers: Record<string, unknown> }>;
}

/** Creates a credential with the admin token and exchanges it for an access token. */
export async function signIn(
  app: FastifyInstance,
  adminToken: string,
  identity: string,
  credential: Record<string, unknown> = {},
): Promise<TestUser> {
  const created = await app.inject({
    method: 'POST',
    url: `/auth/clients/${identity}/credentials`,
    headers: { 'x-admin-token': adminToken },
    payload: credential,
  });
  if (created.statusCode !== 200) throw new Error(`credential for ${identity}: ${created.statusCode} ${created.body}`);
  const { secret, credential_id } = created.json();
  const token = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ client_id: identity, client_secret: secret }).toString(),
  });
  if (token.statusCode !== 200) throw new Error(`token for ${identity}: ${token.statusCode} ${token.body}`);
  const accessToken = token.json().access_token as string;
  return {
    identity,
    token: accessToken,
    credentialId: credential_id,
    request: async (method, url, body) =>
      app.inject({
        method: method as 'GET',
        url,
        headers: { authorization: `Bearer ${accessToken}` },
        ...(body === undefined ? {} : { payload: body as object }),
      }),
  };
}

/**
 * An account owned by `owner` and a workspace billed to it, with `members` as its genesis grants
 * (the owner is made an owner member when not listed). Returns the account id.
 */
export async function createWorkspace(owner: TestUser, workspace: string, members: Record<string, 'owner' | 'admin' | 'writer' | 'reader'> = {}): Promise<string> {
  const account = await owner.request('POST', '/billing/v1/accounts', { name: `${workspace} account` });
  if (account.statusCode !== 201) throw new Error(`account for ${owner.identity}: ${account.statusCode} ${account.body}`);
  const grants = { [owner.identity]: 'owner', ...members };
  const res = await owner.request('PUT', `/control/v1/workspaces/${workspace}`, {
    billing_account: account.json().account_id,
    members: Object.entries(grants).map(([identity, role]) => ({ identity, role })),
  });
  if (res.statusCode !== 200) throw new Error(`workspace ${workspace}: ${res.statusCode} ${res.body}`);
  return account.json().account_id;
}
