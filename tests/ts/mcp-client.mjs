#!/usr/bin/env node
// Drive the verifier's MCP endpoint with the official TypeScript SDK client
// (@modelcontextprotocol/sdk Client + StreamableHTTPClientTransport), output-schema validation on
// (the SDK default: after tools/list, every tools/call result's structuredContent is checked
// against the tool's outputSchema; v1 also checks it on isError results).
//
//   MCP_URL=http://127.0.0.1:8080/mcp node mcp-client.mjs
//   optional: MAX_CALLS (default 10): verify_schema calls to wait for the payment-required result
//
// Steps: tools/list; verify_schema with a small passing input; get_verification_record; then
// verify_schema again until the result is x402's payment-required tool result (isError: true,
// structuredContent = PaymentRequired, content[0].text = the same JSON; x402 transports-v2/mcp.md),
// whose `extensions.bazaar` is then validated (lib/bazaar.mjs).
//
// Prints a JSON summary; exit 0 when every MCP step passed (the bazaar verdict is reported in
// `bazaar.ok` and does not change the exit code), 1 when a step failed, 2 on a setup error.
import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { validateBazaar } from "./lib/bazaar.mjs";
import { env, printJson } from "./lib/io.mjs";

const url = new URL(env("MCP_URL"));
const maxCalls = Number(process.env.MAX_CALLS || 10);

// A small input that passes (a `test-` agent id is never recorded for reputation).
const PASSING = {
  task_id: "ts-mcp-1",
  agent_id: "test-ts-mcp",
  expected_schema: { type: "object", required: ["total"], properties: { total: { type: "number" } } },
  submitted_output: { total: 3 },
};

const summary = { url: url.href, steps: {}, failures: [] };
const failed = (step, msg) => summary.failures.push(`${step}: ${msg}`);
const errorText = (e) => (e instanceof Error ? e.message : String(e));

// The x402 MCP binding: how a client recognises a payment requirement (transports-v2/mcp.md).
function paymentRequiredOf(result) {
  if (!result?.isError) return null;
  const sc = result.structuredContent;
  if (sc && sc.x402Version === 2 && Array.isArray(sc.accepts)) return sc;
  return null;
}

const client = new Client({ name: "aov-ts-mcp-client", version: "0.0.0" });
const transport = new StreamableHTTPClientTransport(url);
try {
  await client.connect(transport);
} catch (e) {
  printJson({ ...summary, error: `connect: ${errorText(e)}` });
  process.exit(2);
}
summary.server = client.getServerVersion();
summary.protocolVersion = transport.protocolVersion ?? null;

try {
  // 1. tools/list (this also caches the output-schema validators).
  const { tools } = await client.listTools();
  summary.steps.listTools = tools.map((t) => ({
    name: t.name,
    hasOutputSchema: Boolean(t.outputSchema),
    inputSchema: t.inputSchema ?? null,
  }));
  for (const name of ["verify_schema", "get_verification_record"]) {
    if (!tools.some((t) => t.name === name)) failed("listTools", `no tool ${name}`);
  }

  // 2. verify_schema, passing input: a signed receipt whose result is "pass".
  try {
    const r = await client.callTool({ name: "verify_schema", arguments: PASSING });
    const sc = r.structuredContent ?? {};
    summary.steps.verifySchema = {
      isError: Boolean(r.isError),
      result: sc.result ?? null,
      verificationId: sc.verification_id ?? null,
      signed: Boolean(sc.signature || sc.attestation),
      textMirrorsStructured: r.content?.[0]?.type === "text" && safeParse(r.content[0].text) !== undefined
        // The same JSON value (the text is the REST body's own text: its key order may differ).
        && isDeepStrictEqual(safeParse(r.content[0].text), r.structuredContent),
      meta: r._meta ?? null,
    };
    if (r.isError) failed("verifySchema", `isError result: ${JSON.stringify(r.structuredContent ?? r.content)}`);
    else if (sc.result !== "pass") failed("verifySchema", `result ${JSON.stringify(sc.result)}, expected "pass"`);
  } catch (e) {
    failed("verifySchema", errorText(e));
  }

  // 3. get_verification_record for an id with no history: the signed no_data record.
  try {
    const r = await client.callTool({ name: "get_verification_record", arguments: { agent_id: "test-nobody" } });
    summary.steps.getVerificationRecord = {
      isError: Boolean(r.isError),
      reason: r.structuredContent?.reason ?? null,
      trustScore: r.structuredContent?.trust_score ?? null,
    };
    if (r.isError) failed("getVerificationRecord", `isError result: ${JSON.stringify(r.structuredContent ?? r.content)}`);
  } catch (e) {
    failed("getVerificationRecord", errorText(e));
  }

  // 4. verify_schema until the allowance is spent: the payment-required tool result.
  let paymentRequired = null;
  const calls = [];
  for (let i = 0; i < maxCalls && !paymentRequired; i++) {
    try {
      const r = await client.callTool({ name: "verify_schema", arguments: PASSING });
      paymentRequired = paymentRequiredOf(r);
      calls.push(paymentRequired ? "payment_required" : r.isError ? "error" : "result");
      if (paymentRequired) {
        summary.steps.paymentRequired = {
          call: i + 1,
          isError: r.isError,
          structuredContent: paymentRequired,
          textMirrorsStructured: JSON.stringify(safeParse(r.content?.[0]?.text)) === JSON.stringify(paymentRequired),
          meta: r._meta ?? null,
        };
      } else if (r.isError) {
        failed("paymentRequired", `call ${i + 1}: isError result that is not a PaymentRequired: ${JSON.stringify(r.structuredContent ?? r.content)}`);
        break;
      }
    } catch (e) {
      // e.g. the SDK's "-32602 Structured content does not match the tool's output schema"
      calls.push("threw");
      failed("paymentRequired", `call ${i + 1}: ${errorText(e)}`);
      break;
    }
  }
  summary.steps.paymentRequiredCalls = calls;
  if (!paymentRequired && !summary.failures.some((f) => f.startsWith("paymentRequired"))) {
    failed("paymentRequired", `no payment-required result after ${maxCalls} calls`);
  }
  summary.bazaar = paymentRequired ? validateBazaar(paymentRequired) : null;
} finally {
  await client.close().catch(() => {});
}

summary.ok = summary.failures.length === 0;
printJson(summary);
process.exit(summary.ok ? 0 : 1);

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
