import { z } from 'zod';
import { ROLES } from '../../core/authz/index.ts';

export const WORKSPACE_NAME = /^[A-Za-z0-9_]{1,63}$/;
export const WorkspaceName = z
  .string()
  .regex(WORKSPACE_NAME, 'must be 1-63 letters, digits or underscores')
  .transform((s) => s.toLowerCase());

export const IdentityString = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/, 'must be 1-128 letters, digits or . _ @ + -, starting with a letter or digit');

export const Role = z.enum(ROLES);

export const WorkspaceParams = z.object({ workspace: WorkspaceName });
export const PolicyParams = z.object({ workspace: WorkspaceName, policy_id: z.string().min(1).max(64) });

export const Principal = z.object({
  identity: IdentityString,
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

export const GenesisGrant = z.object({ identity: IdentityString, role: Role });
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
