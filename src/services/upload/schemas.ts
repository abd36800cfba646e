import { z } from 'zod';

const Column = z.object({
  name: z.string().min(1).max(255),
  type: z.string().min(1).max(64),
  nullable: z.boolean().optional(),
});

const Char = z.string().length(1, 'must be one character');

export const ContractRequest = z.object({
  destination: z.string().min(5).max(200).describe("'workspace.collection.dataset'"),
  schema: z
    .object({
      mode: z.enum(['declared', 'infer', 'dataset', 'auto']).default('auto'),
      columns: z.array(Column).min(1).max(4000).optional().describe('Every column, for declared mode'),
    })
    .prefault({}),
  format: z
    .object({
      type: z.enum(['csv', 'jsonl', 'parquet']).optional().describe('Default: from each file name'),
      delimiter: Char.optional(),
      header: z.boolean().optional(),
      quote: Char.optional(),
      escape: Char.optional(),
      null_string: z.string().max(32).optional(),
    })
    .optional(),
});
export type ContractRequest = z.infer<typeof ContractRequest>;

export const ContractParams = z.object({ contract_id: z.string().min(1).max(64) });

export const PatchRequest = z.object({
  columns: z.record(z.string().min(1).max(255), z.object({ type: z.string().min(1).max(64).optional(), ignore: z.boolean().optional() })),
});

export const AcceptRequest = z.object({ schema_fingerprint: z.string().min(1).max(200) });

export const CommitRequest = z.object({ message: z.string().max(2000).optional() }).nullish();

export const DataHeaders = z.object({
  'x-file-name': z.string().min(1).max(255).optional(),
  'idempotency-key': z.string().min(1).max(255).optional(),
});

export const CommitHeaders = z.object({ 'idempotency-key': z.string().min(1).max(255).optional() });
