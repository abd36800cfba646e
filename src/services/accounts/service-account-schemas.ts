import { z } from 'zod';
import { Identity } from '../../core/http/index.ts';
import { AccountParams } from './account-schemas.ts';

export { AccountParams };
export { CreateCredentialRequest, CreateCredentialResponse, CredentialMetadataSchema as CredentialMetadata, RevokeCredentialResponse } from '../auth/index.ts';

export const ServiceAccountParams = AccountParams.extend({ identity: Identity });
export const ServiceAccountCredentialParams = ServiceAccountParams.extend({ credential_id: z.string().min(1).max(64) });

export const AddServiceAccountRequest = z
  .object({ identity: Identity.describe("The service account's identity: the client_id of its credentials") })
  .meta({ id: 'AddServiceAccountRequest' });

export const ServiceAccount = z.object({
  account_id: z.string(),
  identity: z.string(),
  added_by: z.string().describe('The member who added it'),
  added_at: z.string(),
});

export const ServiceAccountList = z.object({
  account_id: z.string(),
  service_accounts: z.array(ServiceAccount),
  plan: z.string().describe("The account's plan"),
  limit: z.number().describe('Service accounts the plan allows'),
  used: z.number().describe('Service accounts the account has'),
});

export const RemoveServiceAccountResponse = z.object({
  message: z.string(),
  account_id: z.string(),
  identity: z.string(),
  revoked_credentials: z.array(z.string()).describe('The credentials revoked with it'),
});
