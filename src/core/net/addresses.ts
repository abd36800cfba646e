/** Whether an IP address is public, and how host names are resolved: for outbound calls to addresses users chose. */
import dns from 'node:dns';
import net from 'node:net';

/** Resolves a host name to its addresses (injectable for tests). */
export type HostResolver = (host: string) => Promise<string[]>;

const RESOLVE_TIMEOUT_MS = 5_000;

export const systemResolver: HostResolver = async (host) => {
  let timer: NodeJS.Timeout | undefined;
  try {
    const lookup = dns.promises.lookup(host, { all: true, verbatim: true }).then((rows) => rows.map((r) => r.address));
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), RESOLVE_TIMEOUT_MS);
    });
    return await Promise.race([lookup, timeout]);
  } finally {
    clearTimeout(timer);
  }
};

// Two lists: a BlockList also matches IPv4 addresses against IPv4-mapped IPv6 subnets.
const NON_PUBLIC_V4 = new net.BlockList();
const NON_PUBLIC_V6 = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC_V4.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 96], // the unspecified and loopback addresses, and IPv4-compatible ones (::a.b.c.d, deprecated)
  ['::ffff:0:0', 96],
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT)
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC_V6.addSubnet(prefix, bits, 'ipv6');
}

/**
 * An IPv6 address as its eight 16-bit groups: `::` expanded, a trailing dotted IPv4 part read as two
 * groups, brackets and a zone id (`%eth0`) dropped. Undefined when it is not an IPv6 address.
 */
function ipv6Groups(address: string): number[] | undefined {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%[^%]*$/, '');
  if (net.isIPv6(bare) === false) return undefined;
  let text = bare;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.length === 8 ? groups.map((g) => parseInt(g, 16)) : undefined;
}

/**
 * Whether an IP address is a public unicast one (not private, loopback, link-local, documentation, …).
 * An IPv6 address is judged in its expanded form, whatever its spelling (`::7f00:1`, `0:0::1`,
 * `fe80::1%eth0`); an IPv4-mapped one (`::ffff:a.b.c.d`, `::ffff:7f00:1`) as its IPv4 address. Other
 * forms that embed an IPv4 address (IPv4-compatible `::a.b.c.d`, IPv4-translated, NAT64, 6to4,
 * Teredo) are never public: they reach IPv4 through a translator.
 */
export function isPublicAddress(address: string): boolean {
  if (net.isIPv4(address)) return !NON_PUBLIC_V4.check(address, 'ipv4');
  const groups = ipv6Groups(address);
  if (!groups || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return false;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return isPublicAddress([groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.'));
  }
  return !NON_PUBLIC_V6.check(groups.map((g) => g.toString(16)).join(':'), 'ipv6');
}
