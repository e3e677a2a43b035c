// Recognising IP address literals in every spelling a URL parser accepts, and whether they are private.
//
// Host names in `permissions.net` must be names, never addresses: an address skips the name-based
// allow list and many spellings (`127.1`, `2130706433`, `0x7f.0.0.1`, `0177.0.0.1`, `[::ffff:7f00:1]`)
// reach loopback. We follow the WHATWG URL host parser: a host whose last label is numeric (decimal
// or 0x-hex) IS an IPv4 address to fetch(), whatever the other labels say. The WHATWG parser
// (global URL, pure) gives the canonical form, which we then check against non-public ranges.

/** What an IP-looking host is: not an IP, a non-public address, a public one, or an unusable one. */
export type IpClass = 'not-ip' | 'private' | 'public' | 'invalid';

// Non-public IPv4 ranges (base, prefix length): this network, private, CGNAT, loopback, link-local,
// IETF protocol assignments, benchmarking, documentation, multicast, reserved, broadcast.
const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

function v4ToNumber(dotted: string): number {
  return dotted.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function isPrivateV4(dotted: string): boolean {
  const value = v4ToNumber(dotted);
  return V4_BLOCKED.some(([base, bits]) => {
    const size = 2 ** (32 - bits);
    const start = v4ToNumber(base);
    return value >= start && value < start + size;
  });
}

/** Expands a canonical (URL-serialised, unbracketed) IPv6 address to 8 numeric groups. */
function v6Groups(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const zeros = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...new Array<number>(zeros).fill(0), ...right];
}

function isPrivateV6(address: string): boolean {
  const g = v6Groups(address);
  const first = g[0] ?? 0;
  const allZero = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (allZero(0, 8)) return true; // ::
  if (allZero(0, 7) && g[7] === 1) return true; // ::1
  if ((first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00) return true; // ULA, link-local, multicast
  if (first === 0x2001 && g[1] === 0x0db8) return true; // documentation
  const embedded = (hi: number | undefined, lo: number | undefined): string =>
    [(hi ?? 0) >> 8, (hi ?? 0) & 255, (lo ?? 0) >> 8, (lo ?? 0) & 255].join('.');
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) carry a v4 address.
  if (allZero(0, 5) && (g[5] === 0xffff || g[5] === 0)) return isPrivateV4(embedded(g[6], g[7]));
  if (first === 0x64 && g[1] === 0xff9b && allZero(2, 6)) return isPrivateV4(embedded(g[6], g[7]));
  if (first === 0x2002) return isPrivateV4(embedded(g[1], g[2])); // 6to4
  return false;
}

/** Whether `host` (lower case, no port, no brackets for IPv4) is an IP literal, and of which class. */
export function classifyIp(host: string): IpClass {
  const v6 = host.startsWith('[') || host.includes(':');
  if (v6) {
    const inner = host.replace(/^\[|\]$/g, '');
    try {
      const canonical = new URL(`http://[${inner}]/`).hostname.slice(1, -1);
      return isPrivateV6(canonical) ? 'private' : 'public';
    } catch {
      return 'invalid';
    }
  }
  const labels = host.split('.');
  const last = labels.at(-1) === '' ? labels.at(-2) : labels.at(-1);
  if (last === undefined || !/^(0x[0-9a-f]*|\d+)$/i.test(last)) return 'not-ip';
  try {
    const canonical = new URL(`http://${host}/`).hostname;
    return /^\d+\.\d+\.\d+\.\d+$/.test(canonical) && !isPrivateV4(canonical) ? 'public' : 'private';
  } catch {
    return 'invalid'; // e.g. 1.2.3.4.5 or 256.0.0.1: unusable, and never a name
  }
}
