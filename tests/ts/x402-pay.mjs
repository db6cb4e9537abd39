#!/usr/bin/env node
// Pay for one call with the official x402 TypeScript client: @x402/fetch's wrapFetchWithPayment
// around an x402Client on which only the EVM `exact` scheme for Base (eip155:8453) is registered,
// signing with a viem local account. The client reads the 402's PAYMENT-REQUIRED, keeps the
// offers it can pay (so a Solana offer is filtered out), signs an EIP-3009 authorization and
// retries with PAYMENT-SIGNATURE.
//
//   URL_BASE=http://127.0.0.1:8080 BUYER_KEY=0x... BODY_FILE=body.json node x402-pay.mjs
//   optional: ROUTE (default /verify/schema), METHOD (default POST; GET sends no body),
//             NETWORK (default eip155:8453)
//
// Prints {status, body, paymentResponse, paymentRequired, paymentPayload, exchanges} as JSON:
// `exchanges` lists every HTTP request the client made (method, status, paid or not), so a caller
// can check that exactly one payment was sent. Exit 0 on a 2xx answer, 1 otherwise, 2 on a
// client-side failure (the message is printed as {error}).
import { readFileSync } from "node:fs";
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { decodeB64Json, env, printJson } from "./lib/io.mjs";

const base = env("URL_BASE").replace(/\/$/, "");
const key = env("BUYER_KEY");
const route = process.env.ROUTE || "/verify/schema";
const method = (process.env.METHOD || "POST").toUpperCase();
const network = process.env.NETWORK || "eip155:8453";
const body = method === "GET" ? undefined : readFileSync(env("BODY_FILE"), "utf8");

const account = privateKeyToAccount(key);
const client = new x402Client().register(network, new ExactEvmScheme(account));

// Record every exchange the official wrapper makes (it calls this fetch for the first request
// and for the paid retry).
const exchanges = [];
let paymentRequired = null;
let paymentPayload = null;
async function recordingFetch(request) {
  const signature = request.headers.get("payment-signature");
  if (signature) paymentPayload = decodeB64Json(signature);
  const response = await fetch(request);
  exchanges.push({ method: request.method, status: response.status, paid: Boolean(signature) });
  if (response.status === 402 && !paymentRequired) {
    paymentRequired = decodeB64Json(response.headers.get("payment-required"));
  }
  return response;
}

const pay = wrapFetchWithPayment(recordingFetch, client);
let response;
try {
  response = await pay(base + route, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body,
  });
} catch (e) {
  printJson({ error: e instanceof Error ? e.message : String(e), exchanges, paymentRequired });
  process.exit(2);
}

const text = await response.text();
let parsed;
try {
  parsed = JSON.parse(text);
} catch {
  parsed = text;
}
const header = response.headers.get("payment-response");
printJson({
  status: response.status,
  body: parsed,
  paymentResponse: header ? decodePaymentResponseHeader(header) : null,
  paymentRequired,
  paymentPayload,
  payer: account.address,
  exchanges,
});
process.exit(response.ok ? 0 : 1);
