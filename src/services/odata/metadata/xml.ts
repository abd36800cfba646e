/**
 * A minimal XML writer. fast-xml-parser's XMLBuilder leaves control characters, tabs and line breaks
 * in attribute values as they are: the first make the document ill-formed, the others are folded to
 * spaces by every parser. Descriptions and commit messages are user text, so everything goes
 * through escapeXml here.
 */

export interface XmlElement {
  name: string;
  attributes: Record<string, string | undefined>;
  children: XmlElement[];
  text?: string;
}

/** An element; attributes whose value is undefined are left out. */
export function element(name: string, attributes: Record<string, string | undefined> = {}, children: XmlElement[] = []): XmlElement {
  return { name, attributes, children };
}

export function textElement(name: string, text: string): XmlElement {
  return { name, attributes: {}, children: [], text };
}

/** Characters XML 1.0 cannot carry at all, not even as character references (lone surrogates included). */
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** Text escapeXml leaves as it is. */
const PLAIN = /^[^&<>"'\t\n\r\uD800-\uDFFF\u0000-\u001F\uFFFE\uFFFF]*$/;

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};

/** Text safe in an attribute value or element content: markup escaped, whitespace kept, impossible characters replaced by U+FFFD. */
export function escapeXml(text: string): string {
  // Most names and values need nothing: skip the replacing (the service-wide $metadata escapes thousands).
  if (PLAIN.test(text)) return text;
  return text.replace(NOT_XML, '\uFFFD').replace(/[&<>"'\t\n\r]/g, (c) => ENTITIES[c]);
}

function attributeText(attributes: XmlElement['attributes']): string {
  return Object.entries(attributes)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => ` ${key}="${escapeXml(value)}"`)
    .join('');
}

/** The element as indented XML text (two spaces a level). */
export function serialize(node: XmlElement, indent = ''): string {
  const open = `${indent}<${node.name}${attributeText(node.attributes)}`;
  if (node.text !== undefined) return `${open}>${escapeXml(node.text)}</${node.name}>`;
  if (node.children.length === 0) return `${open}/>`;
  const inner = node.children.map((child) => serialize(child, `${indent}  `)).join('\n');
  return `${open}>\n${inner}\n${indent}</${node.name}>`;
}

/** The start tag of an element whose children are written after it, as serialize writes it. */
export function startTag(name: string, attributes: XmlElement['attributes'], indent: string): string {
  return `${indent}<${name}${attributeText(attributes)}>`;
}

export const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';
