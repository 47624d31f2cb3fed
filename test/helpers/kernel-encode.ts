// What only the kernel writes, as it writes it: link and address messages, the end of a
// dump, acknowledgements and errors. The fake kernel (fake-transport.ts) answers with these
// bytes, and the dataplane's decoders (src/dataplane/codec.ts) read them back.
import { createRequire } from 'node:module';
import {
  NLM_F_MULTI,
  NLMSG_DONE,
  NLMSG_ERROR,
  type DecodedAddress,
  type DecodedLink,
  type NetlinkMessage,
} from '../../src/dataplane/codec.js';

const require = createRequire(import.meta.url);
const structs = require('netlink/dist/structs.js') as typeof import('netlink/dist/structs.js');
const rt = require('netlink/dist/rt/structs.js') as typeof import('netlink/dist/rt/structs.js');

const NLM_F_CAPPED = 0x100;
const NLM_F_ACK_TLVS = 0x200;
const NLMSGERR_ATTR_MSG = 1;
const NLMSG_HDRLEN = 16;

function encode(type: number, flags: number, seq: number, port: number, payload: Uint8Array[]): Buffer {
  return Buffer.concat(structs.formatMessage({ type, flags, seq, port, data: payload }));
}

function streamOf(fill: (out: InstanceType<typeof structs.AttrStream>) => void): Uint8Array[] {
  const out = new structs.AttrStream();
  fill(out);
  return out.bufs;
}

export function encodeLink(type: number, flags: number, seq: number, port: number, link: DecodedLink): Buffer {
  const payload = streamOf((out) =>
    rt.formatLinkMessage(
      {
        kind: 'link',
        data: { index: link.index, flags: link.up ? { up: true } : {} },
        attrs: { ifname: link.name, ...(link.mtu === null ? {} : { mtu: link.mtu }) },
      },
      out,
    ),
  );
  return encode(type, flags, seq, port, payload);
}

export function encodeAddress(type: number, flags: number, seq: number, port: number, a: DecodedAddress): Buffer {
  const addressFlags = {
    ...(a.tentative ? { tentative: true as const } : {}),
    ...(a.dadFailed ? { dadfailed: true as const } : {}),
  };
  const payload = streamOf((out) =>
    rt.formatAddressMessage(
      {
        kind: 'address',
        data: { family: a.family, prefixlen: a.prefixLength, index: a.index, flags: addressFlags },
        attrs: a.address ? { address: a.address, local: a.address, flags: addressFlags } : { flags: addressFlags },
      },
      out,
    ),
  );
  return encode(type, flags, seq, port, payload);
}

function extAckAttribute(extAck: string | undefined): Buffer[] {
  if (extAck === undefined) return [];
  const text = Buffer.from(`${extAck}\0`);
  const header = Buffer.alloc(4);
  header.writeUInt16LE(4 + text.length, 0);
  header.writeUInt16LE(NLMSGERR_ATTR_MSG, 2);
  return [header, text, Buffer.alloc((4 - (text.length % 4)) % 4)];
}

function errnoField(errno: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(-errno, 0);
  return b;
}

/** The end of a dump as the kernel writes it: an int error, then (NLM_F_ACK_TLVS) ext-ack attributes. */
export function encodeDone(seq: number, port: number, errno = 0, extAck?: string, flags = 0): Buffer {
  const tlvs = extAckAttribute(extAck);
  return encode(NLMSG_DONE, NLM_F_MULTI | flags | (tlvs.length ? NLM_F_ACK_TLVS : 0), seq, port, [
    errnoField(errno),
    ...tlvs,
  ]);
}

/**
 * An acknowledgement (errno 0: the request's header only, NLM_F_CAPPED) or an error
 * (the whole request echoed, then ext-ack attributes), as the kernel writes them.
 */
export function encodeError(port: number, request: NetlinkMessage, errno: number, extAck?: string): Buffer {
  const header = Buffer.alloc(NLMSG_HDRLEN);
  header.writeUInt32LE(NLMSG_HDRLEN + request.data.length, 0);
  header.writeUInt16LE(request.type, 4);
  header.writeUInt16LE(request.flags, 6);
  header.writeUInt32LE(request.seq, 8);
  header.writeUInt32LE(request.port, 12);
  // The kernel pads the echoed request to 4 bytes; its nlmsg_len stays unpadded.
  const pad = Buffer.alloc((4 - (request.data.length % 4)) % 4);
  const echoed = errno === 0 ? [header] : [header, request.data, pad];
  const tlvs = extAckAttribute(extAck);
  const flags = (errno === 0 ? NLM_F_CAPPED : 0) | (tlvs.length ? NLM_F_ACK_TLVS : 0);
  return encode(NLMSG_ERROR, flags, request.seq, port, [errnoField(errno), ...echoed, ...tlvs]);
}
