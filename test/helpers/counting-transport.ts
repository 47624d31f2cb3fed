// The real netlink transport, counting the route, link and address dump requests sent
// through it: how a test or the bench tells an answer kept by the subscription from a dump.
import { NLM_F_DUMP, RTM_GETADDR, RTM_GETLINK, RTM_GETROUTE } from '../../src/dataplane/codec.js';
import { nativeTransport, type NetlinkTransport } from '../../src/dataplane/transport.js';

export function countingTransport(): {
  transport: NetlinkTransport;
  routeDumps: () => number;
  linkDumps: () => number;
  addressDumps: () => number;
} {
  let routeDumps = 0;
  let linkDumps = 0;
  let addressDumps = 0;
  const transport: NetlinkTransport = {
    open(options, onReadable) {
      const socket = nativeTransport.open(options, onReadable);
      return {
        portId: socket.portId,
        send(datagram) {
          const type = datagram.readUInt16LE(4);
          if ((datagram.readUInt16LE(6) & NLM_F_DUMP) === NLM_F_DUMP) {
            if (type === RTM_GETROUTE) routeDumps++;
            else if (type === RTM_GETLINK) linkDumps++;
            else if (type === RTM_GETADDR) addressDumps++;
          }
          socket.send(datagram);
        },
        recv: () => socket.recv(),
        setRef: (ref) => socket.setRef(ref),
        close: () => socket.close(),
      };
    },
  };
  return { transport, routeDumps: () => routeDumps, linkDumps: () => linkDumps, addressDumps: () => addressDumps };
}
