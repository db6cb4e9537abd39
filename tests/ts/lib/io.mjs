// Small helpers shared by the scripts: read JSON from a file or stdin, print JSON, decode the
// base64 JSON of x402 headers.
import { readFileSync } from "node:fs";

/** JSON from `path`, or from stdin when `path` is missing or "-". */
export function readJson(path) {
  const text = !path || path === "-" ? readFileSync(0, "utf8") : readFileSync(path, "utf8");
  return JSON.parse(text);
}

/** One JSON document on stdout (pretty, so a failing test shows it readably). */
export function printJson(value) {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** base64 JSON header (PAYMENT-REQUIRED, PAYMENT-RESPONSE, PAYMENT-SIGNATURE) -> object. */
export function decodeB64Json(header) {
  return header ? JSON.parse(Buffer.from(header, "base64").toString("utf8")) : null;
}

/** A required environment variable, or exit 2 with a message naming it. */
export function env(name, fallback) {
  const v = process.env[name] ?? fallback;
  if (v === undefined || v === "") {
    process.stderr.write(`missing environment variable ${name}\n`);
    process.exit(2);
  }
  return v;
}
