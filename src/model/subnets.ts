import { BlockList, isIP } from 'node:net';

export interface Subnet {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** `203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32`: an address alone is a one-address subnet. */
export function parseSubnet(text: string): Subnet | undefined {
  const [address = '', prefixText, extra] = text.trim().split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return undefined;
  const bits = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/**
 * Whether a client address lies in one of the subnets. Node's BlockList does the matching and also
 * matches an IPv4-mapped IPv6 address (`::ffff:203.0.113.7`, as a dual-stack listener reports it)
 * against IPv4 subnets.
 */
export function createSourceAllowlist(subnets: readonly string[]): (address: string | undefined) => boolean {
  const list = new BlockList();
  for (const text of subnets) {
    const subnet = parseSubnet(text);
    if (!subnet) throw new Error(`not an IP address or CIDR: ${text}`);
    list.addSubnet(subnet.address, subnet.prefix, subnet.family);
  }
  return (address) => {
    if (address === undefined) return false;
    const version = isIP(address);
    return version !== 0 && list.check(address, version === 4 ? 'ipv4' : 'ipv6');
  };
}
