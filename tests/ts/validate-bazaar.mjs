#!/usr/bin/env node
// Validate `extensions.bazaar` of an x402 v2 PaymentRequired (decoded JSON, as our 402 answers
// carry it in PAYMENT-REQUIRED and MCP carries it in structuredContent) with the official
// @x402/extensions validator plus the bazaar.md rules it only soft-drops (see lib/bazaar.mjs).
//
//   node validate-bazaar.mjs payment-required.json      # or: ... | node validate-bazaar.mjs
//
// Prints {ok, errors, warnings, official, catalog} as JSON; exit 0 when ok, 1 when not, 2 when
// the input cannot be read.
import { validateBazaar } from "./lib/bazaar.mjs";
import { printJson, readJson } from "./lib/io.mjs";

let paymentRequired;
try {
  paymentRequired = readJson(process.argv[2]);
} catch (e) {
  process.stderr.write(`cannot read a PaymentRequired JSON: ${e.message}\n`);
  process.exit(2);
}
const result = validateBazaar(paymentRequired);
printJson(result);
process.exit(result.ok ? 0 : 1);
