import { z } from 'zod';
import { NAME_REGEX } from '../catalog/names.ts';

/** An identity string: `alice`, `svc-loader`, `bob@example.com` — a client_id, a token's `sub`, a policy principal. */
export const IDENTITY_REGEX = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/;
export const Identity = z.string().regex(IDENTITY_REGEX, 'must be 1-128 letters, digits or . _ @ + -, starting with a letter or digit');

/** A workspace name as a path parameter: letters, digits and underscores, 1-63, lowercased. */
export const WorkspaceName = z
  .string()
  .regex(NAME_REGEX, 'must be 1-63 letters, digits or underscores')
  .transform((s) => s.toLowerCase());
