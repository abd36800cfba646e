import type { RejectedValue } from '../../core/engine/index.ts';

/** The columns of a rejects file (every file of a contract's download has them once). */
export const REJECTS_HEADER = 'file,record,line,column,value,reason,action\n';

/** A CSV field: quoted when it must be; NULL is an empty unquoted field, an empty text `""`. */
function field(value: string | number | null): string {
  if (value === null) return '';
  const text = String(value);
  return text === '' || /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A write's rejects file: its header, then one line per rejected value, in file order. */
export function rejectsCsv(file: string, list: RejectedValue[]): string {
  return REJECTS_HEADER + list.map((r) => `${[file, r.record, r.line, r.column, r.value, r.reason, r.action].map(field).join(',')}\n`).join('');
}

const INTEGER = /^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$/;

/** A type that stores `value`: DOUBLE for a number in an integer column, otherwise VARCHAR (which stores anything). */
function typeThatStores(type: string, value: string): string {
  return INTEGER.test(type) && value.trim() !== '' && Number.isFinite(Number(value)) ? 'DOUBLE' : 'VARCHAR';
}

const shellArg = (arg: string) => (/^[A-Za-z0-9_.,=:/@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`);

/**
 * The exact ways to store a refused value: retype its column (infer and declared modes; the dataset
 * declares the types in dataset mode), or an on_error policy. `fix` is for programs, `text` for people.
 */
export function storableFix(mode: string, column: string, type: string, value: string | null) {
  const policies = value === null ? (['skip'] as const) : (['null', 'skip'] as const);
  const onError = { cli: policies.map((p) => `--on-error ${p}`), patch: policies.map((p) => ({ columns: {}, on_error: p })) };
  const policyText =
    value === null
      ? `set on_error to skip to leave such records out (lakeport upload --on-error skip, or PATCH the contract with ${JSON.stringify(onError.patch[0])})`
      : `set on_error (lakeport upload --on-error null|skip, or PATCH the contract with ${JSON.stringify(onError.patch[0])} or ${JSON.stringify(onError.patch[1])}): null stores NULL for such values, skip leaves their records out`;
  const after = 'then write the file again; what was not stored is counted and listed at GET /upload/v2/contracts/{id}/rejects';
  if (value === null) {
    const declared = mode === 'declared' ? `, or declare column "${column}" nullable` : mode === 'dataset' ? `, or make column "${column}" nullable in the dataset` : '';
    return { fix: { on_error: onError }, text: `To store the file: ${policyText}${declared}; ${after}.` };
  }
  if (mode === 'dataset') {
    const dataset = `The dataset declares column "${column}" as ${type}; change the dataset's column (then negotiate again) to store such values`;
    return { fix: { on_error: onError, dataset }, text: `To store the file: ${policyText}; ${after}. ${dataset}.` };
  }
  const to = typeThatStores(type, value);
  const retype = { type: to, cli: `--column ${shellArg(`${column}=${to}`)}`, patch: { columns: { [column]: { type: to } } } };
  return {
    fix: { retype, on_error: onError },
    text: `To store it: retype the column as ${to} (lakeport upload ${retype.cli}, or PATCH the contract with ${JSON.stringify(retype.patch)}), or ${policyText}; ${after}.`,
  };
}
