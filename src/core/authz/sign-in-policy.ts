/** How a person signed in, as the sign-in policy judges it (from the provider's ID token). */
export interface SignInFacts {
  identity: string;
  /** 'idp_a' | 'idp_b': the configured provider used. */
  provider: 'idp_a' | 'idp_b';
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  /** The ID token's amr values (e.g. ['pwd'], ['pwd','mfa'], ['otp']). */
  amr: string[];
  /** When the person authenticated at the provider (ID token auth_time, or the time of sign-in). */
  authTime: Date;
  /** Provider groups claim, when the provider sends one. */
  groups: string[];
}

export type SignInVerdict =
  | { allowed: true; accountId: string | null; policyVersion: number }
  | { allowed: false; accountId: string | null; policyVersion: number; code: string; reason: string };

/** The accounts module's judge of interactive sign-ins and refreshes; the auth module calls it. */
export interface SignInPolicy {
  /** At the callback: may this person sign in? A refused sign-in is recorded as a denial by the implementation. */
  judgeSignIn(facts: SignInFacts): Promise<SignInVerdict>;
  /** At refresh: is a session begun at `session.startedAt` under `session.policyVersion` still good? */
  judgeRefresh(facts: SignInFacts, session: { startedAt: Date; policyVersion: number }): Promise<SignInVerdict>;
  /** Machine credentials: may `identity` mint a credential of this lifetime (days; null = never expires)? Throws an AppError (403) when not. */
  checkCredentialMint(identity: string, expiresInDays: number | null): Promise<void>;
}

/** No account policy (an identity outside any account, or a server without the accounts module): everything allowed. */
export const ALLOW_ALL_SIGN_INS: SignInPolicy = {
  judgeSignIn: async () => ({ allowed: true, accountId: null, policyVersion: 0 }),
  judgeRefresh: async () => ({ allowed: true, accountId: null, policyVersion: 0 }),
  checkCredentialMint: async () => {},
};

/** A sign-in as stored (an interactive session, or an account's record of a last sign-in). */
export interface StoredSignIn {
  provider: string;
  issuer: string;
  subject: string;
  email: string | null;
  email_verified: boolean;
  amr: string[];
  groups: string[];
  auth_time: Date;
}

/** The facts a stored sign-in gives the policy to judge. */
export function signInFactsOf(identity: string, row: StoredSignIn): SignInFacts {
  return {
    identity,
    provider: row.provider as SignInFacts['provider'],
    issuer: row.issuer,
    subject: row.subject,
    email: row.email,
    emailVerified: row.email_verified,
    amr: row.amr,
    authTime: row.auth_time,
    groups: row.groups,
  };
}
