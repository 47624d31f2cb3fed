// The real netlink transport, counting the route dump requests sent through it: how the
// bench checks that one observation reads the main table once.
import { NLM_F_DUMP, RTM_GETROUTE } from '../../src/dataplane/codec.js';
import { nativeTransport, type NetlinkTransport } from '../../src/dataplane/channel.js';

export function countingTransport(): { transport: NetlinkTransport; routeDumps: () => number } {
  let routeDumps = 0;
  const transport: NetlinkTransport = {
    open(options, onReadable) {
      const socket = nativeTransport.open(options, onReadable);
      return {
        portId: socket.portId,
        send(datagram) {
          const dump = (datagram.readUInt16LE(6) & NLM_F_DUMP) === NLM_F_DUMP;
          if (dump && datagram.readUInt16LE(4) === RTM_GETROUTE) routeDumps++;
          socket.send(datagram);
        },
        recv: () => socket.recv(),
        setRef: (ref) => socket.setRef(ref),
        close: () => socket.close(),
      };
    },
  };
  return { transport, routeDumps: () => routeDumps };
}
