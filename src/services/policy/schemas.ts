import { z } from 'zod';
import { ROLES } from '../../core/authz/index.ts';
import { Identity, mediaResponse, queryBoolean, WorkspaceName } from '../../core/http/index.ts';


export const Role = z.enum(ROLES);

export const WorkspaceParams = z.object({ workspace: WorkspaceName });
export const PolicyParams = z.object({ workspace: WorkspaceName, policy_id: z.string().min(1).max(64) });

export const Principal = z.object({
  identity: Identity,
  type: z.enum(['user', 'service_account']).default('user'),
});

export const CreatePolicyRequest = z.object({
  principal: Principal,
  role: Role,
  pattern: z.string().min(1).max(200),
});

export const UpdatePolicyRequest = z.object({
  role: Role,
  pattern: z.string().min(1).max(200),
});

export const GenesisGrant = z.object({ identity: Identity, role: Role });
export const GenesisGrantRequest = z.object({
  grants: z.array(GenesisGrant).min(1, 'at least one grant is required'),
});

export const PolicyDetail = z.object({
  policy_id: z.string(),
  workspace: z.string(),
  principal: z.object({ identity: z.string(), type: z.string() }),
  role: z.string(),
  pattern: z.string(),
  created_by: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const WorkspacePoliciesResponse = z.object({ workspace: z.string(), policies: z.array(PolicyDetail) });
export const GenesisGrantResponse = WorkspacePoliciesResponse;
export const DeletePolicyResponse = z.object({ message: z.string(), policy_id: z.string(), workspace: z.string() });

/** `?dry_run=true` on a policy write: every check, no change; the answer is the plan. */
export const DryRunQuery = z.object({ dry_run: queryBoolean(false) });

const PlannedPolicy = z.object({ principal: z.object({ identity: z.string(), type: z.string() }), role: z.string(), pattern: z.string() });
export const PolicyPlanResponse = z.object({
  dry_run: z.literal(true),
  workspace: z.string(),
  effect: z.enum(['create', 'keep', 'update', 'delete']),
  before: PolicyDetail.nullable(),
  after: PlannedPolicy.nullable(),
});

export const EffectivePermissionsCsv = mediaResponse('Effective permissions per dataset', { 'text/csv': z.string() });
