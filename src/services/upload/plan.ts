import crypto from 'node:crypto';
import type { ColumnDef } from '../../core/catalog/index.ts';
import { commonType, decimalParts, isWidening, normalizeType, physicalType, type CsvDialectInfo, type SourceColumn, type TextEncoding } from '../../core/engine/index.ts';

export type PlanAction = 'keep' | 'retag' | 'widen' | 'cast' | 'ignored' | 'undeclared' | 'unsupported';

export interface PlanEntry {
  column: string;
  action: PlanAction;
  source_type: string | null;
  target_type: string | null;
  nullable: boolean;
  /** The type each file has the column as, when files differ. */
  sources?: Record<string, string | null>;
}

export interface Issue {
  severity: 'blocking' | 'warning';
  code: string;
  column: string | null;
  file: string | null;
  message: string;
}

export interface SampledFile {
  name: string;
  format: string;
  columns: SourceColumn[];
  /** CSV and JSONL: the text encoding (absent in contracts from before encodings: UTF-8). */
  encoding?: TextEncoding;
  /** CSV: the dialect negotiated for the file (sniffed, with the client's options winning). */
  csv?: CsvDialectInfo;
}

export type Overrides = Record<string, { type?: string; ignore?: boolean }>;

/** A column written to Parquet: the dataset's column plus the file column that feeds it. */
export interface TargetColumnDef extends ColumnDef {
  source?: string;
}

export interface Planned {
  plan: PlanEntry[];
  issues: Issue[];
  target: TargetColumnDef[];
  fingerprint: string;
}

interface UnifiedColumn {
  name: string;
  type: string | undefined;
  sourceType: string;
  perFile: Record<string, string | null>;
  disagree: boolean;
}

const lower = (s: string) => s.toLowerCase();

/** The files' columns merged by name: a common type where the files' types meet. */
function unify(files: SampledFile[]): UnifiedColumn[] {
  const byName = new Map<string, UnifiedColumn>();
  for (const file of files) {
    for (const col of file.columns) {
      const key = lower(col.name);
      const seen = byName.get(key);
      if (!seen) {
        byName.set(key, { name: col.name, type: col.type, sourceType: col.sourceType, perFile: { [file.name]: col.type ?? col.sourceType }, disagree: false });
        continue;
      }
      seen.perFile[file.name] = col.type ?? col.sourceType;
      if (seen.type === undefined || col.type === undefined) {
        seen.disagree ||= seen.type !== col.type;
        continue;
      }
      const common = commonType(seen.type, col.type);
      if (common === undefined) {
        seen.disagree = true;
        seen.type = 'VARCHAR';
      } else seen.type = common;
    }
  }
  for (const col of byName.values()) for (const file of files) if (!(file.name in col.perFile)) col.perFile[file.name] = null;
  return [...byName.values()];
}

/** A column inferred as DECIMAL from fixed-point text is a DOUBLE (as DuckDB sniffed it) for any target but a DECIMAL. */
function sniffed(col: SourceColumn): SourceColumn {
  const before = col.type && decimalParts(col.type) ? normalizeType(col.sourceType) : undefined;
  return before === 'DOUBLE' || before === 'FLOAT' ? { ...col, type: before } : col;
}

function inferredDecimalIssue(column: string, type: string, files: SampledFile[]): Issue {
  const scales = new Set(files.flatMap((f) => f.columns.filter((c) => lower(c.name) === lower(column) && sniffed(c) !== c).map((c) => decimalParts(c.type!)![1])));
  const scale = decimalParts(type)![1];
  const decimals = `${scales.size > 1 ? 'up to ' : ''}${scale} decimal${scale === 1 ? '' : 's'}`;
  return issue(
    'warning',
    'INFERRED_DECIMAL',
    column,
    `Column "${column}" holds fixed-point numbers with ${decimals} in every sampled value; inferred ${type} so sums are exact (PATCH {"columns": {"${column}": {"type": "DOUBLE"}}} or --column ${column}=DOUBLE for floating point)`,
  );
}

function compare(source: string | undefined, target: string): PlanAction {
  if (source === undefined) return 'unsupported';
  if (source === target) return 'keep';
  if (physicalType(source) === physicalType(target)) return 'retag';
  if (isWidening(source, target)) return 'widen';
  return 'cast';
}

function isLossy(source: string, target: string): boolean {
  const numeric = /INT|FLOAT|DOUBLE|DECIMAL/;
  if (numeric.test(source) && numeric.test(target)) return true; // not a widening, so it may lose range or precision
  if (source === 'TIMESTAMP WITH TIME ZONE' && target !== 'VARCHAR') return true;
  return target !== 'VARCHAR' && source !== 'VARCHAR';
}

function fingerprint(target: TargetColumnDef[], plan: PlanEntry[]): string {
  const canonical = JSON.stringify({
    columns: target.map((c) => [c.name, c.type, c.nullable, c.source ?? null]),
    plan: plan.map((p) => [p.column, p.action, p.target_type]),
  });
  return `sha256:${crypto.createHash('sha256').update(canonical).digest('hex')}`;
}

function issue(severity: Issue['severity'], code: string, column: string | null, message: string, file: string | null = null): Issue {
  return { severity, code, column, file, message };
}

/**
 * Plans every column: what the files have, what the destination gets, and what happens between.
 * `definition` is the destination's columns (declared or dataset mode); undefined infers them.
 */
export function planContract(files: SampledFile[], definition: ColumnDef[] | undefined, overrides: Overrides): Planned {
  const sources = unify(files);
  // The same, with inferred decimals read as DuckDB sniffed them: the source of any non-DECIMAL target.
  const asSniffed = unify(files.map((f) => ({ ...f, columns: f.columns.map(sniffed) })));
  const sourceFor = (src: UnifiedColumn, target: string) => (decimalParts(target) ? src : asSniffed.find((s) => s.name === src.name)!);
  const plan: PlanEntry[] = [];
  const issues: Issue[] = [];
  const target: TargetColumnDef[] = [];
  const overrideOf = (name: string) => Object.entries(overrides).find(([k]) => lower(k) === lower(name))?.[1];

  for (const src of sources.filter((s) => s.disagree)) {
    const types = Object.entries(src.perFile).map(([f, t]) => `${f}: ${t ?? 'absent'}`).join(', ');
    issues.push(issue('warning', 'FILES_DISAGREE', src.name, `The files disagree on column "${src.name}" (${types}); it is read as ${src.type ?? 'unsupported'}`));
  }
  for (const src of sources) {
    const missingIn = Object.entries(src.perFile).filter(([, t]) => t === null).map(([f]) => f);
    if (missingIn.length > 0) issues.push(issue('warning', 'COLUMN_MISSING_IN_FILE', src.name, `Column "${src.name}" is missing in ${missingIn.join(', ')}; those rows get NULL`, missingIn[0]));
  }

  if (definition === undefined) {
    for (const src of sources) {
      const o = overrideOf(src.name);
      const entry = { column: src.name, source_type: src.type ?? src.sourceType, sources: src.perFile, nullable: true };
      if (o?.ignore) {
        plan.push({ ...entry, action: 'ignored', target_type: null });
        continue;
      }
      const targetType = o?.type ?? src.type;
      if (targetType === undefined) {
        plan.push({ ...entry, action: 'unsupported', target_type: null });
        issues.push(issue('blocking', 'UNSUPPORTED_TYPE', src.name, `Column "${src.name}" has the nested type ${src.sourceType}, which Lakeport cannot store; decline it (PATCH {"columns": {"${src.name}": {"ignore": true}}})`));
        continue;
      }
      const from = sourceFor(src, targetType);
      const action = from.type === undefined ? 'cast' : compare(from.type, targetType);
      plan.push({ ...entry, source_type: from.type ?? from.sourceType, sources: from.perFile, action, target_type: targetType });
      if (action === 'cast') issues.push(castIssue(src.name, from.type ?? from.sourceType, targetType));
      if (action === 'keep' && from.type !== sourceFor(src, 'DOUBLE').type) issues.push(inferredDecimalIssue(src.name, targetType, files));
      target.push({ name: src.name, type: targetType, nullable: true, source_type: src.sourceType, source: src.name });
    }
  } else {
    for (const def of definition) {
      const found = sources.find((s) => lower(s.name) === lower(def.name));
      const src = found && sourceFor(found, def.type);
      const o = src ? overrideOf(src.name) : undefined;
      const column: TargetColumnDef = { ...def, source_type: src?.sourceType ?? def.source_type, source: src && !o?.ignore ? src.name : undefined };
      if (!src || o?.ignore) {
        plan.push({ column: def.name, action: src ? 'ignored' : 'keep', source_type: src?.type ?? null, target_type: def.type, nullable: def.nullable });
        issues.push(
          def.nullable
            ? issue('warning', 'COLUMN_NOT_IN_FILES', def.name, `Column "${def.name}" is not loaded from the files; its values are NULL`)
            : issue('blocking', 'REQUIRED_COLUMN_MISSING', def.name, `Column "${def.name}" is NOT NULL but the files do not provide it`),
        );
        target.push(column);
        continue;
      }
      const action = compare(src.type, def.type);
      plan.push({ column: def.name, action, source_type: src.type ?? src.sourceType, target_type: def.type, nullable: def.nullable, sources: src.perFile });
      if (action === 'unsupported') {
        issues.push(issue('blocking', 'UNSUPPORTED_TYPE', def.name, `Column "${def.name}" has the nested type ${src.sourceType} in the files, which cannot be stored as ${def.type}`));
      } else if (action === 'cast') issues.push(castIssue(def.name, src.type!, def.type));
      target.push(column);
    }
    for (const src of sources.filter((s) => !definition.some((d) => lower(d.name) === lower(s.name)))) {
      const ignored = overrideOf(src.name)?.ignore === true;
      plan.push({ column: src.name, action: ignored ? 'ignored' : 'undeclared', source_type: src.type ?? src.sourceType, target_type: null, nullable: true, sources: src.perFile });
      if (!ignored) issues.push(issue('warning', 'UNDECLARED_COLUMN', src.name, `Column "${src.name}" is not declared by the dataset and is not loaded`));
    }
  }
  return { plan, issues, target, fingerprint: fingerprint(target, plan) };
}

function castIssue(column: string, from: string, to: string): Issue {
  return isLossy(from, to)
    ? issue('warning', 'LOSSY_CAST', column, `Column "${column}" is rewritten from ${from} to ${to}, which can lose range or precision; values that do not fit are refused at write`)
    : issue('warning', 'CAST', column, `Column "${column}" is rewritten from ${from} to ${to}; values that do not fit are refused at write`);
}
