import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import forge from "node-forge";

/** A test CA and a serving certificate it signed, PEM-encoded. */
export interface TestCertificates {
  /** The CA certificate (for a webhook configuration's `caBundle`, base64 of it). */
  readonly caPem: string;
  /** The serving certificate (`tls.crt`). */
  readonly certPem: string;
  /** The serving key, PKCS#8 (`tls.key`). */
  readonly keyPem: string;
  /** `caBundle` as a webhook configuration takes it (base64 of `caPem`). */
  readonly caBundle: string;
  /** Writes `tls.crt`, `tls.key` and `ca.crt` into `dir` as cert-manager's Secret volume holds them. */
  writeTo(dir: string): Promise<void>;
}

/** Options of {@link createTestCertificates}. */
export interface TestCertificateOptions {
  /** DNS names of the serving certificate (default `localhost`). */
  dnsNames?: readonly string[];
  /** IP addresses of the serving certificate (default `127.0.0.1`). */
  ipAddresses?: readonly string[];
  /** Validity in days (default 1). */
  days?: number;
}

/**
 * Makes a self-signed CA and a serving certificate for a webhook server under test (RSA 2048 keys from
 * Node's crypto; Node cannot build X.509 certificates itself, so `node-forge` encodes and signs them). The
 * API server trusts the CA through the webhook configuration's `caBundle`, as cert-manager's CA
 * injection arranges in a cluster.
 *
 * @example
 * ```ts
 * const certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
 * await certs.writeTo(certDir);
 * const server = new WebhookServer({ certDir, port: 0, host: "127.0.0.1" });
 * ```
 */
export async function createTestCertificates(
  options: TestCertificateOptions = {},
): Promise<TestCertificates> {
  const days = options.days ?? 1;
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + days * 86_400_000);
  // Node generates the keys (fast, native); forge only encodes and signs the certificates.
  const keyPair = () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const privatePem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const key = forge.pki.privateKeyFromPem(privatePem) as forge.pki.rsa.PrivateKey;
    return { privatePem, key, publicKey: forge.pki.setRsaPublicKey(key.n, key.e) };
  };
  const serial = () => `01${randomBytes(15).toString("hex")}`;
  const caKeys = keyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = serial();
  ca.validity.notBefore = notBefore;
  ca.validity.notAfter = notAfter;
  const caName = [{ name: "commonName", value: "capi-ts test CA" }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKeys.key, forge.md.sha256.create());

  const servingKeys = keyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = servingKeys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = notAfter;
  cert.setSubject([{ name: "commonName", value: options.dnsNames?.[0] ?? "localhost" }]);
  cert.setIssuer(caName);
  cert.setExtensions([
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    {
      name: "subjectAltName",
      altNames: [
        ...(options.dnsNames ?? ["localhost"]).map((value) => ({ type: 2, value })),
        ...(options.ipAddresses ?? ["127.0.0.1"]).map((ip) => ({ type: 7, ip })),
      ],
    },
    { name: "authorityKeyIdentifier", keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKeys.key, forge.md.sha256.create());

  const caPem = forge.pki.certificateToPem(ca);
  const certPem = forge.pki.certificateToPem(cert);
  const keyPem = servingKeys.privatePem;
  return {
    caPem,
    certPem,
    keyPem,
    caBundle: Buffer.from(caPem).toString("base64"),
    async writeTo(dir) {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "tls.crt"), certPem);
      await writeFile(join(dir, "tls.key"), keyPem, { mode: 0o600 });
      await writeFile(join(dir, "ca.crt"), caPem);
    },
  };
}
