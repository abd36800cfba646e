/**
 * A minimal XML writer: elements go straight to text, two spaces a level, with no element tree (the
 * service-wide $metadata writes hundreds of thousands). fast-xml-parser's XMLBuilder leaves control
 * characters, tabs and line breaks in attribute values as they are: the first make the document
 * ill-formed, the others are folded to spaces by every parser. Descriptions and commit messages are
 * user text, so everything goes through escapeXml here.
 */

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

/** ` name="value"`, escaped; nothing when the value is undefined. */
export function attr(name: string, value: string | undefined): string {
  return value === undefined ? '' : ` ${name}="${escapeXml(value)}"`;
}

/**
 * An element written at `indent` (each line ends with a newline): `attributes` is attr()'s text, `body`
 * the children's lines (written two spaces deeper); an element without children closes itself.
 */
export function xmlElement(indent: string, name: string, attributes = '', body = ''): string {
  return body === '' ? `${indent}<${name}${attributes}/>\n` : `${indent}<${name}${attributes}>\n${body}${indent}</${name}>\n`;
}

export const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';
