import type { AccountTables } from './tables/accounts.ts';
import type { AuthTables } from './tables/auth.ts';
import type { CatalogBindingTables } from './tables/catalog-bindings.ts';
import type { CatalogTables } from './tables/catalog.ts';
import type { ClusterTables } from './tables/cluster.ts';
import type { DomainTables } from './tables/domains.ts';
import type { IdpTables } from './tables/idp.ts';
import type { JobTables } from './tables/jobs.ts';
import type { PaymentTables } from './tables/payments.ts';
import type { NotificationTables } from './tables/notifications.ts';
import type { PolicyTables } from './tables/policy.ts';
import type { SecretTables } from './tables/secrets.ts';
import type { UploadTables } from './tables/upload.ts';

export type * from './tables/types.ts';
export type * from './tables/auth.ts';
export type * from './tables/accounts.ts';
export type * from './tables/policy.ts';
export type * from './tables/catalog.ts';
export type * from './tables/upload.ts';
export type * from './tables/jobs.ts';
export type * from './tables/secrets.ts';
export type * from './tables/domains.ts';
export type * from './tables/payments.ts';
export type * from './tables/notifications.ts';
export type * from './tables/idp.ts';
export type * from './tables/catalog-bindings.ts';
export type * from './tables/cluster.ts';

export interface Database extends AuthTables, AccountTables, PolicyTables, CatalogTables, UploadTables, JobTables, SecretTables, DomainTables, PaymentTables, NotificationTables, IdpTables, CatalogBindingTables, ClusterTables {}
