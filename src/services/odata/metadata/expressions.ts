import { element, textElement, type XmlElement } from './xml.ts';

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

/** A value as a child element: `<Int>1</Int>`, `<Record>…</Record>`, `<Collection>…</Collection>`. */
function valueElement(value: Expression): XmlElement {
  if (isConstant(value)) return textElement(value.kind, value.value);
  if (value.kind === 'Collection') return element('Collection', {}, value.items.map(valueElement));
  const present = value.fields.filter((field): field is [string, Expression] => field[1] !== undefined);
  return element('Record', {}, present.map(([property, fieldValue]) => holder('PropertyValue', { Property: property }, fieldValue)));
}

/** An element that holds a value: a constant inline as an attribute, anything else as a child. */
function holder(name: string, attributes: Record<string, string>, value: Expression, annotations: XmlElement[] = []): XmlElement {
  if (isConstant(value)) return element(name, { ...attributes, [value.kind]: value.value }, annotations);
  return element(name, attributes, [...annotations, valueElement(value)]);
}

/** `<Annotation Term="Custom.<term>" …>`, with annotations of the annotation (they come first, as CSDL requires). */
export function annotation(term: string, value: Expression, annotations: XmlElement[] = []): XmlElement {
  return holder('Annotation', { Term: `${VOCABULARY}.${term}` }, value, annotations);
}
