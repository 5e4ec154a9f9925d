import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { isIPv4 } from "node:net";

/** A PEM certificate and its PEM (PKCS#8) key. */
export interface SelfSignedCertificate {
  /** The certificate, PEM. */
  readonly cert: string;
  /** The private key, PKCS#8 PEM. */
  readonly key: string;
}

// Node can sign but not build X.509 certificates: the few DER structures a serving certificate needs
// are encoded here (ASN.1 DER, X.509 v3 as RFC 5280), which spares the SDK a certificate library.
function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  if (body.length < 0x80) return Buffer.concat([Buffer.from([tag, body.length]), body]);
  const length: number[] = [];
  for (let n = body.length; n > 0; n >>>= 8) length.unshift(n & 0xff);
  return Buffer.concat([Buffer.from([tag, 0x80 | length.length, ...length]), body]);
}

const sequence = (...parts: Buffer[]) => der(0x30, ...parts);

function objectId(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const encoded = [arc & 0x7f];
    for (let value = arc >>> 7; value > 0; value >>>= 7) encoded.unshift((value & 0x7f) | 0x80);
    bytes.push(...encoded);
  }
  return der(0x06, Buffer.from(bytes));
}

function utcTime(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-01-02T03:04:05.678Z → 260102030405Z
  const text = `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return der(0x17, Buffer.from(text, "ascii"));
}

const ECDSA_WITH_SHA256 = sequence(objectId("1.2.840.10045.4.3.2"));

/**
 * Makes a self-signed ECDSA P-256 serving certificate in memory, as controller-runtime's metrics server
 * does when no certificate folder is given: clients cannot verify it (scrapers run with
 * `insecure_skip_verify`, as for CAPI providers), but the traffic, bearer tokens included, is encrypted.
 *
 * @example
 * ```ts
 * const { cert, key } = selfSignedCertificate(["localhost", "127.0.0.1"]);
 * https.createServer({ cert, key }, handler);
 * ```
 */
export function selfSignedCertificate(
  hosts: readonly string[] = ["localhost", "127.0.0.1"],
  validDays = 365,
): SelfSignedCertificate {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const serial = randomBytes(16);
  // A positive INTEGER in minimal DER: top bit clear, and a first byte never 0 (a leading zero byte
  // before a byte under 0x80 is "illegal padding", and OpenSSL refuses the certificate).
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;
  const name = sequence(
    der(0x31, sequence(objectId("2.5.4.3"), der(0x0c, Buffer.from(`capi-ts-diagnostics`)))),
  );
  const now = Date.now();
  const alternativeNames = hosts.map((host) =>
    isIPv4(host)
      ? der(0x87, Buffer.from(host.split(".").map(Number)))
      : der(0x82, Buffer.from(host, "ascii")),
  );
  const critical = der(0x01, Buffer.from([0xff]));
  const extensions = der(
    0xa3,
    sequence(
      sequence(objectId("2.5.29.17"), der(0x04, sequence(...alternativeNames))),
      sequence(objectId("2.5.29.19"), critical, der(0x04, sequence())),
      // keyUsage: digitalSignature only (bit 0; 7 unused bits).
      sequence(objectId("2.5.29.15"), critical, der(0x04, der(0x03, Buffer.from([0x07, 0x80])))),
      // extKeyUsage: serverAuth.
      sequence(objectId("2.5.29.37"), der(0x04, sequence(objectId("1.3.6.1.5.5.7.3.1")))),
    ),
  );
  const toBeSigned = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ECDSA_WITH_SHA256,
    name,
    sequence(utcTime(new Date(now - 60_000)), utcTime(new Date(now + validDays * 86_400_000))),
    name,
    publicKey.export({ type: "spki", format: "der" }),
    extensions,
  );
  const signature = sign("sha256", toBeSigned, privateKey);
  const certificate = sequence(
    toBeSigned,
    ECDSA_WITH_SHA256,
    der(0x03, Buffer.from([0]), signature),
  );
  const lines = certificate.toString("base64").match(/.{1,64}/g) ?? [];
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}
