import dns2 from 'dns2';

const { Packet } = dns2;

/** How the test DNS server answers a name's TXT query. */
export type TxtAnswer =
  /** TXT records, each a list of character-strings (split records test RFC 7208 joining). */
  | { txt: string[][] }
  | 'nodata'
  | 'nxdomain'
  | 'servfail'
  | 'refused'
  /** Never answers: the client times out. */
  | 'timeout';

/**
 * A real DNS server over UDP on loopback (dns2), on a free port, for the domain verification tests:
 * `set(name, answer)` decides what a TXT query for `name` gets; unknown names are NXDOMAIN.
 */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for node:dns `setServers` (LAKEPORT_DNS_SERVERS). */
  address: string;
  set(name: string, answer: TxtAnswer): void;
  /** Names queried, lowercase, in order. */
  queries: string[];
  stop(): Promise<void>;
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const answers = new Map<string, TxtAnswer>();
  const queries: string[] = [];
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    const name = question.name.toLowerCase().replace(/\.$/, '');
    queries.push(name);
    const answer = answers.get(name) ?? 'nxdomain';
    if (answer === 'timeout') return;
    if (answer === 'nxdomain') response.header.rcode = Packet.RCODE.NXDOMAIN;
    else if (answer === 'servfail') response.header.rcode = Packet.RCODE.SERVFAIL;
    else if (answer === 'refused') response.header.rcode = Packet.RCODE.REFUSED;
    else if (answer !== 'nodata' && question.type === Packet.TYPE.TXT) {
      for (const strings of answer.txt) {
        response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data: strings } as never);
      }
    }
    send(response);
  });
  await server.listen(0, '127.0.0.1');
  const { port } = server.address();
  return {
    address: `127.0.0.1:${port}`,
    set: (name, answer) => void answers.set(name.toLowerCase(), answer),
    queries,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
