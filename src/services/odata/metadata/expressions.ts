import { attr, escapeXml, xmlElement } from './xml.ts';

/** CSDL annotation values: constants, records and collections, written as CSDL XML. */
export type ConstantKind = 'Int' | 'Bool' | 'String';

export interface Constant {
  kind: ConstantKind;
  value: string;
}

export interface RecordValue {
  kind: 'Record';
  /** Property name → value; undefined values are left out. */
  fields: [string, Expression | undefined][];
}

export interface CollectionValue {
  kind: 'Collection';
  items: Expression[];
}

export type Expression = Constant | RecordValue | CollectionValue;

export const VOCABULARY = 'Custom';
export const EDM_NAMESPACE = 'http://docs.oasis-open.org/odata/ns/edm';

export const stringValue = (value: string): Constant => ({ kind: 'String', value });
export const intValue = (value: number | bigint | string): Constant => ({ kind: 'Int', value: String(value) });
export const boolValue = (value: boolean): Constant => ({ kind: 'Bool', value: String(value) });
export const record = (fields: RecordValue['fields']): RecordValue => ({ kind: 'Record', fields });
export const collection = (items: Expression[]): CollectionValue => ({ kind: 'Collection', items });

function isConstant(value: Expression): value is Constant {
  return value.kind !== 'Record' && value.kind !== 'Collection';
}

/** A value as a child element at `indent`: `<Int>1</Int>`, `<Record>…</Record>`, `<Collection>…</Collection>`. */
function valueText(value: Expression, indent: string): string {
  if (isConstant(value)) return `${indent}<${value.kind}>${escapeXml(value.value)}</${value.kind}>\n`;
  const inner = `${indent}  `;
  let body = '';
  if (value.kind === 'Collection') for (const item of value.items) body += valueText(item, inner);
  else for (const [property, field] of value.fields) if (field !== undefined) body += holder(inner, 'PropertyValue', attr('Property', property), field);
  return xmlElement(indent, value.kind, '', body);
}

/** An element that holds a value: a constant inline as an attribute, anything else as a child (after `annotations`, written two spaces deeper). */
function holder(indent: string, name: string, attributes: string, value: Expression, annotations = ''): string {
  if (isConstant(value)) return xmlElement(indent, name, attributes + attr(value.kind, value.value), annotations);
  return xmlElement(indent, name, attributes, annotations + valueText(value, `${indent}  `));
}

/**
 * `<Annotation Term="Custom.<term>" …>` at `indent`, with annotations of the annotation (they come
 * first, as CSDL requires; written two spaces deeper).
 */
export function annotation(indent: string, term: string, value: Expression, annotations = ''): string {
  return holder(indent, 'Annotation', ` Term="${VOCABULARY}.${escapeXml(term)}"`, value, annotations);
}
