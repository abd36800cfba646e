import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import { managerOf } from './manager.ts';
import * as S from './account-schemas.ts';
import type { AccountService } from './account-service.ts';

export interface AccountRouteDeps {
  accounts: AccountService;
  verifier: TokenVerifier;
}

/** Accounts, members and invoices; mounted under both /billing and /control. */
export const accountRoutes =
  (deps: AccountRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { accounts } = deps;
    const onRequest = requireAuth(deps.verifier, 'accounts');
    const security = [{ bearer: [] }];
    const caller = (request: FastifyRequest) => principalOf(request).identity;

    app.get(
      '/v1/accounts',
      {
        onRequest,
        schema: { summary: 'List the accounts the caller is an active member of (at most one)', security, response: { 200: z.array(S.Account) } },
      },
      async (request) => accounts.listAccounts(caller(request)),
    );

    app.post(
      '/v1/accounts',
      {
        onRequest,
        schema: {
          summary: 'Create an account; the caller becomes its first active billing_admin',
          security,
          body: S.CreateAccountRequest,
          response: { 201: S.Account },
        },
      },
      async (request, reply) => reply.status(201).send(await accounts.createAccount(managerOf(request, 'account.create'), request.body)),
    );

    app.get(
      '/v1/accounts/:account_id',
      {
        onRequest,
        schema: { summary: 'Read an account (active member)', security, params: S.AccountParams, response: { 200: S.Account } },
      },
      async (request) => accounts.getAccount(caller(request), request.params.account_id),
    );

    app.patch(
      '/v1/accounts/:account_id',
      {
        onRequest,
        schema: {
          summary: 'Update an account (billing_admin)',
          security,
          params: S.AccountParams,
          body: S.UpdateAccountRequest,
          response: { 200: S.Account },
        },
      },
      async (request) => accounts.updateAccount(managerOf(request, 'account.update'), request.params.account_id, request.body),
    );

    app.delete(
      '/v1/accounts/:account_id',
      {
        onRequest,
        schema: {
          summary: 'Deactivate an account and delete its members (billing_admin); 409 while a workspace references it',
          security,
          params: S.AccountParams,
          response: { 200: S.Account },
        },
      },
      async (request) => accounts.deleteAccount(managerOf(request, 'account.delete'), request.params.account_id),
    );

    app.get(
      '/v1/accounts/:account_id/members',
      {
        onRequest,
        schema: {
          summary: 'List members and unexpired invites (active member); expired invites are deleted',
          security,
          params: S.AccountParams,
          response: { 200: z.array(S.Member) },
        },
      },
      async (request) => accounts.listMembers(caller(request), request.params.account_id),
    );

    app.post(
      '/v1/accounts/:account_id/members',
      {
        onRequest,
        schema: {
          summary: 'Invite a member (billing_admin); re-inviting a pending identity resets its 7-day clock',
          security,
          params: S.AccountParams,
          body: S.InviteMemberRequest,
          response: { 201: S.Member },
        },
      },
      async (request, reply) => reply.status(201).send(await accounts.invite(managerOf(request, 'member.invite'), request.params.account_id, request.body)),
    );

    app.patch(
      '/v1/accounts/:account_id/members/:identity',
      {
        onRequest,
        schema: {
          summary: "Change a member's role (billing_admin)",
          security,
          params: S.MemberParams,
          body: S.UpdateMemberRoleRequest,
          response: { 200: S.Member },
        },
      },
      async (request) =>
        accounts.updateMemberRole(managerOf(request, 'member.change_role'), request.params.account_id, request.params.identity, request.body.role),
    );

    app.delete(
      '/v1/accounts/:account_id/members/:identity',
      {
        onRequest,
        schema: {
          summary: 'Remove a member or withdraw an invite (billing_admin, or the identity itself)',
          security,
          params: S.MemberParams,
          response: { 200: S.RemoveMemberResponse },
        },
      },
      async (request) => accounts.removeMember(managerOf(request, 'member.remove'), request.params.account_id, request.params.identity),
    );

    app.post(
      '/v1/accounts/:account_id/members/:identity/accept',
      {
        onRequest,
        schema: {
          summary: 'Accept a pending invite (the invited identity only)',
          security,
          params: S.MemberParams,
          response: { 200: S.Member },
        },
      },
      async (request) => accounts.accept(managerOf(request, 'member.accept'), request.params.account_id, request.params.identity),
    );

    app.get(
      '/v1/invoices',
      {
        onRequest,
        schema: { summary: 'List invoices (placeholder: always empty)', security, response: { 200: z.array(S.Invoice) } },
      },
      async () => accounts.listInvoices(),
    );

    app.get(
      '/v1/invoices/:invoice_id',
      {
        onRequest,
        schema: {
          summary: 'Read an invoice (placeholder: a minimal draft invoice)',
          security,
          params: S.InvoiceParams,
          response: { 200: S.Invoice },
        },
      },
      async (request) => accounts.getInvoice(request.params.invoice_id),
    );
  };
