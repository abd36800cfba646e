import { z } from 'zod';
import { ROLES } from '../../core/authz/index.ts';
import { Identity, WorkspaceName } from '../../core/http/index.ts';
import { CatalogBindingRequest } from './catalog-binding-schemas.ts';

export const WorkspaceNameParams = z.object({ name: WorkspaceName });

export const WorkspaceMemberGrant = z.object({
  identity: Identity,
  role: z.enum(ROLES),
});

const members = z
  .array(WorkspaceMemberGrant)
  .min(1, 'at least one member is required')
  .refine((list) => new Set(list.map((m) => m.identity)).size === list.length, 'each identity may appear once')
  .refine((list) => list.some((m) => m.role === 'owner'), 'at least one member must be an owner');

export const BillingWorkspaceCreateRequest = z.object({
  billing_account: z.string().min(1).max(64),
  members,
});

export const ControlWorkspaceCreateRequest = BillingWorkspaceCreateRequest.extend({
  catalog: CatalogBindingRequest.nullable()
    .optional()
    .describe('The catalog binding to store once the workspace exists (docs/catalog-bindings.md); null or absent: the native catalog'),
});

export const WorkspaceView = z.object({
  name: z.string(),
  billing_account: z.string(),
  members: z.array(z.object({ identity: z.string(), role: z.string() })),
  created_by: z.string(),
  created_at: z.string(),
  state: z.enum(['active', 'deleted']),
  deleted_at: z.string().nullable(),
  purge_after: z.string().nullable(),
  deletion_protection: z.boolean(),
  drop_protection: z.boolean(),
  history_protection: z.boolean(),
});

export const GuardProperties = z.object({
  workspace: z.string(),
  deletion_protection: z.boolean(),
  drop_protection: z.boolean(),
  history_protection: z.boolean(),
});

export const AccountParams = z.object({ account_id: z.string().min(1).max(64) });
