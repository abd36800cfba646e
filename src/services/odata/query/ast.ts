import type { Duration } from './temporal.ts';

/** A literal as written: numbers keep their text so nothing is lost to floating point. */
export type Literal =
  | { type: 'null' }
  | { type: 'boolean'; value: boolean }
  | { type: 'number'; text: string }
  | { type: 'string'; value: string }
  | { type: 'date'; days: number }
  | { type: 'datetime'; micros: bigint }
  | { type: 'time'; micros: bigint }
  | { type: 'duration'; duration: Duration; text: string };

export type CompareOp = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';
export type ShiftOp = 'add' | 'sub';

/**
 * A parsed $filter expression. `pos` is the 0-based offset in the option text where the node starts,
 * `text` its source text, `depth` the height of its subtree; binary nodes also keep their operator's offset.
 */
export type Expr = { pos: number; depth: number; text: string } & (
  | { kind: 'literal'; literal: Literal }
  | { kind: 'column'; name: string }
  | { kind: 'call'; name: string; args: Expr[] }
  | { kind: 'compare'; op: CompareOp; opPos: number; left: Expr; right: Expr }
  | { kind: 'shift'; op: ShiftOp; opPos: number; left: Expr; right: Expr }
  | { kind: 'logical'; op: 'and' | 'or'; operands: Expr[] }
  | { kind: 'not'; operand: Expr }
);
