import { performance } from 'node:perf_hooks';
import type { Authorizer, Principal } from '../../core/authz/index.ts';
import { requireManage } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { DataKeys } from '../../core/crypto/index.ts';
import type { Db } from '../../core/db/index.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { OutboundError, type OutboundHttp } from '../../core/net/index.ts';
import type { AccountService } from './account-service.ts';
import { CatalogBindingRepo, type CatalogBindingRow, type CatalogBindingWrite } from './catalog-binding-repo.ts';
import { REDACTED, type CatalogBindingInput, type CatalogKind, type CatalogTestInput } from './catalog-binding-schemas.ts';
import { accountsError } from './errors.ts';
import { mapTables, skipped, type MappedTable } from './external-names.ts';
import { CatalogCallError, listCatalog, probeCatalog, type CatalogAuth, type IcebergRestTarget } from './iceberg-rest.ts';
import type { WorkspaceRepo } from './workspace-repo.ts';

export interface CatalogBindingServiceDeps {
  db: Db;
  authz: Authorizer;
  accounts: AccountService;
  /** The workspace records: which billing account's data key seals a binding's credential. */
  records: Pick<WorkspaceRepo, 'get'>;
  dataKeys: DataKeys;
  /** The catalog, where a sync's stubs go (in one transaction with the binding's own record). */
  catalog: Pick<Catalog, 'replaceExternalDatasets'>;
  /** The guarded client for calls to external catalogs (timeouts, address checks). */
  http: OutboundHttp;
  log?: Logger;
}

type IcebergBinding = Extract<CatalogBindingInput, { kind: 'iceberg_rest' }>;

/** A binding as stored, ready to call: the target and (opened only for the call) its credential. */
interface Connection {
  target: IcebergRestTarget;
  auth: CatalogAuth | undefined;
}

/** Binds a sealed credential to its workspace and purpose. */
const sealContext = (workspace: string) => `lakeport/catalog-binding/v1/${workspace}`;

function redact(auth: CatalogAuth): Record<string, string> {
  if (auth.type === 'bearer') return { type: 'bearer', token: REDACTED };
  const { client_secret: _secret, ...rest } = auth;
  return { ...rest, client_secret: REDACTED };
}

function nativeView(workspace: string) {
  return { workspace, kind: 'native' as const, config: {}, auth: null, preserve_sql_case: false, updated_by: null, updated_at: null, last_sync: null };
}

function bindingView(row: CatalogBindingRow) {
  return {
    workspace: row.workspace,
    kind: row.kind as CatalogKind,
    config: row.config,
    auth: row.auth_redacted as never,
    preserve_sql_case: row.preserve_sql_case,
    updated_by: row.updated_by,
    updated_at: row.updated_at.toISOString(),
    last_sync: row.last_sync,
  };
}

/** The fields that say which catalog a binding lists: when they change, the old stubs go. */
const targetOf = (kind: string, config: Record<string, string>) => JSON.stringify([kind, config.uri, config.warehouse ?? null, config.prefix ?? null]);

/**
 * Workspace catalog bindings on /control (docs/catalog-bindings.md): read (any role on the
 * workspace), change and revert (owner or admin), test a draft or the saved binding, and sync the
 * external catalog into stub datasets (owner or admin). The credential is sealed with the billing
 * account's data key; it is opened only for a call to the catalog, and never answered or logged.
 */
export class CatalogBindingService {
  private readonly repo: CatalogBindingRepo;
  private readonly log: Logger;

  constructor(private readonly deps: CatalogBindingServiceDeps) {
    this.repo = new CatalogBindingRepo(deps.db.kysely);
    this.log = deps.log ?? silentLogger;
  }

  /** The binding, redacted; `native` when there is none. Any role on the workspace. */
  async read(caller: Principal, workspace: string) {
    await this.deps.authz.require(caller, 'reader', { workspace });
    const row = await this.repo.find(workspace);
    return row ? bindingView(row) : nativeView(workspace);
  }

  /**
   * Replaces the binding (the credential too: a PUT without `auth` stores none). `kind: native`
   * reverts, as DELETE does. A binding to another catalog (kind, uri, warehouse or prefix changed)
   * removes the stubs the old one listed, in the same transaction. Owner or admin.
   */
  async put(caller: Principal, workspace: string, input: CatalogBindingInput) {
    await this.deps.authz.require(caller, 'admin', { workspace });
    if (input.kind === 'native') return this.remove(caller, workspace);
    const write = await this.prepare(workspace, input, caller.identity);
    const existing = await this.repo.find(workspace);
    if (!existing || targetOf(existing.kind, existing.config) === targetOf(write.kind, write.config)) {
      return bindingView(await this.repo.write(this.deps.db.kysely, write));
    }
    let row: CatalogBindingRow | undefined;
    await this.deps.catalog.replaceExternalDatasets(workspace, [], caller.identity, async (trx) => {
      row = await this.repo.write(trx, write);
    });
    return bindingView(row!);
  }

  /** Reverts to the native catalog: the binding and every stub it listed go, in one transaction. Owner or admin. */
  async remove(caller: Principal, workspace: string) {
    await this.deps.authz.require(caller, 'admin', { workspace });
    await this.deps.catalog.replaceExternalDatasets(workspace, [], caller.identity, (trx) => this.repo.remove(trx, workspace));
    return nativeView(workspace);
  }

  /**
   * Workspace create's `catalog` (step d, after genesis): stored unless the workspace already has a
   * binding (a retry keeps it; PUT …/catalog changes it). The caller passed workspace create's checks.
   */
  async bindAtCreate(workspace: string, input: CatalogBindingInput | null | undefined, actor: string): Promise<void> {
    if (!input || input.kind === 'native') return;
    await this.repo.writeIfAbsent(this.deps.db.kysely, await this.prepare(workspace, input, actor));
  }

  /** Checks a create's `catalog` before anything is written (the address rules). */
  checkAtCreate(input: CatalogBindingInput | null | undefined): void {
    if (input?.kind === 'iceberg_rest') this.checkAddresses(input);
  }

  /**
   * Probes a catalog described in the request: 200 `ok: false` when the catalog fails. Callers: an
   * unnarrowed credential of an active member of a billing account, or of an owner or admin of some
   * workspace — those who may bind one.
   */
  async testDraft(caller: Principal, input: CatalogTestInput) {
    requireManage(caller, 'catalog.test');
    if ((await this.deps.accounts.billingAccountOf(caller.identity)) === null && !(await this.administersAnyWorkspace(caller))) {
      throw accountsError('NOT_A_MEMBER', `'${caller.identity}' is neither a member of a billing account nor an owner or admin of a workspace, so it has no catalog to test`);
    }
    if (input.kind === 'native') return { ok: true, kind: 'native' as const, elapsed_ms: 0 };
    this.checkAddresses(input);
    return this.probe({ target: input.config, auth: input.auth ?? undefined });
  }

  /** Probes the saved binding; its credential is opened for the probe only. Owner or admin. */
  async testSaved(caller: Principal, workspace: string) {
    await this.deps.authz.require(caller, 'admin', { workspace });
    const row = await this.requireBinding(workspace);
    return this.probe(await this.connection(row));
  }

  /**
   * Lists the external catalog into stub datasets. Every external call happens first: a failure
   * (502, 504) leaves the stored listing as it was. Then, in one transaction, the stubs become the
   * listing (added, kept, removed) and the binding records the sync — unless the binding changed
   * meanwhile (409, nothing stored). Owner or admin; only ever on a caller's request.
   */
  async sync(caller: Principal, workspace: string) {
    await this.deps.authz.require(caller, 'admin', { workspace });
    const row = await this.requireBinding(workspace);
    const connection = await this.connection(row);
    let listing: Awaited<ReturnType<typeof listCatalog>>;
    try {
      listing = await listCatalog(this.deps.http, connection.target, connection.auth);
    } catch (error) {
      throw this.syncFailure(workspace, error);
    }
    const mapped = mapTables(listing.tables, { preserveCase: row.preserve_sql_case, kind: row.kind });
    const at = new Date();
    const result = await this.deps.catalog.replaceExternalDatasets(workspace, mapped.entries, caller.identity, async (trx, changes) => {
      const summary = {
        at: at.toISOString(),
        by: caller.identity,
        namespaces: listing.namespaces.length,
        tables: listing.tables.length,
        added: changes.added.length,
        removed: changes.removed.length,
        kept: changes.kept,
        skipped: mapped.skipped.length + changes.conflicts.length,
      };
      await this.repo.recordSync(trx, workspace, row.version, summary);
    });
    const bySlot = new Map<string, MappedTable>(mapped.entries.map((e) => [`${e.collection}.${e.name}`, e]));
    const conflicts = result.conflicts.map((r) => skipped(bySlot.get(`${r.collection}.${r.dataset}`)!.source, 'dataset_exists'));
    const name = (r: { collection: string; dataset: string }) => `${r.collection}.${r.dataset}`;
    this.log.info({ workspace, tables: listing.tables.length, added: result.added.length, removed: result.removed.length }, 'catalog synced');
    return {
      workspace,
      kind: 'iceberg_rest' as const,
      prefix: listing.prefix,
      namespaces: listing.namespaces.length,
      tables: listing.tables.length,
      added: result.added.map(name),
      removed: result.removed.map(name),
      kept: result.kept,
      skipped: [...mapped.skipped, ...conflicts],
      synced_at: at.toISOString(),
    };
  }

  // ── helpers ──────────────────────────────────────────────────────────────────

  private async requireBinding(workspace: string): Promise<CatalogBindingRow> {
    const row = await this.repo.find(workspace);
    if (!row) throw accountsError('CATALOG_NOT_BOUND', `Workspace '${workspace}' uses the native catalog; bind an external one first (PUT /control/v1/workspaces/${workspace}/catalog)`);
    return row;
  }

  /** The row to store: addresses checked, the credential sealed with the billing account's data key. */
  private async prepare(workspace: string, input: IcebergBinding, actor: string): Promise<CatalogBindingWrite> {
    this.checkAddresses(input);
    const record = await this.deps.records.get(workspace);
    if (!record) throw accountsError('WORKSPACE_NOT_FOUND', `Workspace '${workspace}' does not exist`);
    const auth = input.auth ?? null;
    const sealer = auth && (await this.deps.dataKeys.forAccount(record.billing_account));
    return {
      workspace,
      billing_account: record.billing_account,
      kind: input.kind,
      config: input.config as Record<string, string>,
      sealed_auth: auth && sealer!.seal(JSON.stringify(auth), sealContext(workspace)),
      auth_redacted: auth && redact(auth),
      preserve_sql_case: input.preserve_sql_case,
      updated_by: actor,
    };
  }

  /** The stored binding with its credential opened (for one call). */
  private async connection(row: CatalogBindingRow): Promise<Connection> {
    const target = row.config as unknown as IcebergRestTarget;
    this.checkAddresses({ config: target, auth: row.auth_redacted });
    if (row.sealed_auth === null) return { target, auth: undefined };
    try {
      const sealer = await this.deps.dataKeys.forAccount(row.billing_account);
      return { target, auth: JSON.parse(sealer.open(row.sealed_auth, sealContext(row.workspace)).toString('utf8')) as CatalogAuth };
    } catch {
      throw accountsError('CATALOG_CREDENTIAL_UNREADABLE', `The stored credential of '${row.workspace}' cannot be opened (the server's keys changed?); PUT the binding again with its credential`);
    }
  }

  /**
   * The address rules that need no network: http:// only where private networks are allowed (a
   * credential never crosses the internet in clear), and no literal non-public address unless allowed.
   */
  private checkAddresses(input: { config: { uri: string }; auth?: object | null }) {
    const tokenUri = input.auth && 'oauth2_server_uri' in input.auth ? (input.auth.oauth2_server_uri as string | undefined) : undefined;
    for (const url of [input.config.uri, tokenUri]) {
      if (url === undefined) continue;
      if (url.startsWith('http:') && !this.deps.http.allowsPrivateNetworks) {
        throw accountsError('CATALOG_ADDRESS_NOT_ALLOWED', `${url} uses http://; this server calls external catalogs over https:// only (LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS=true also allows http://)`);
      }
      try {
        this.deps.http.checkUrl(url);
      } catch (error) {
        throw addressRefusal(error);
      }
    }
  }

  private async probe(connection: Connection) {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const found = await probeCatalog(this.deps.http, connection.target, connection.auth);
      return { ok: true, kind: 'iceberg_rest' as const, ...found, elapsed_ms: elapsed() };
    } catch (error) {
      if (!(error instanceof CatalogCallError)) throw addressRefusal(error);
      return { ok: false, kind: 'iceberg_rest' as const, reason: error.reason, detail: error.message, ...(error.status ? { status: error.status } : {}), elapsed_ms: elapsed() };
    }
  }

  private syncFailure(workspace: string, error: unknown) {
    if (!(error instanceof CatalogCallError)) return addressRefusal(error);
    this.log.warn({ workspace, reason: error.reason, status: error.status, detail: error.message }, 'catalog sync failed; the stored listing is unchanged');
    const detail = `The external catalog of '${workspace}' failed (${error.message}); the stored listing is unchanged`;
    const extra = { extra: { reason: error.reason, ...(error.status ? { status: error.status } : {}) } };
    return error.reason === 'timeout' ? accountsError('EXTERNAL_CATALOG_TIMEOUT', detail, extra) : accountsError('EXTERNAL_CATALOG_FAILED', detail, extra);
  }

  private async administersAnyWorkspace(caller: Principal): Promise<boolean> {
    for (const workspace of await this.deps.authz.workspacesOf(caller)) {
      if (await this.deps.authz.can(caller, 'admin', { workspace })) return true;
    }
    return false;
  }
}

/** An address refusal or bad URL from the outbound client is the caller's (400); anything else goes on. */
function addressRefusal(error: unknown): unknown {
  if (error instanceof OutboundError && error.kind === 'address_refused') {
    return accountsError('CATALOG_ADDRESS_NOT_ALLOWED', `The catalog's address is refused: ${error.message} (the operator may allow them: LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS=true)`);
  }
  if (error instanceof OutboundError && error.kind === 'invalid_url') return accountsError('CATALOG_ADDRESS_NOT_ALLOWED', `The catalog's address is refused: ${error.message}`);
  return error;
}
