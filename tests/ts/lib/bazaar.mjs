// Validation of the x402 `bazaar` discovery extension of a PaymentRequired (x402 v2), with the
// official functions of @x402/extensions (the ones a facilitator runs before cataloguing), plus
// the rules of specs/extensions/bazaar.md that the package applies only by silently dropping a
// field (serviceName, tags, iconUrl) and the resource-description limit of x402 issue #2993.
//
// Result: { ok, errors: [...], warnings: [...], official: {...}, catalog: {...} }. Every entry of
// `errors` names the rule it comes from, so a failure says what to fix.
import {
  BAZAAR,
  extractDiscoveryInfo,
  isValidIconUrl,
  isValidRouteTemplate,
  isValidServiceName,
  sanitizeTags,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";

const DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema";
const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);
const QUERY_METHODS = new Set(["GET", "HEAD", "DELETE"]);
// x402 issue #2993: the Bazaar refuses a resource whose description is longer than 500 characters.
const MAX_DESCRIPTION = 500;

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const codePoints = (s) => [...s].length;

// The official validator (Ajv 2020-12 of `info` against `schema`) applied to `info` with one
// field changed: used to check that the declared schema really constrains what bazaar.md says it
// must ("Must validate that input.type equals ...", "Must validate the appropriate method enum",
// "Must require toolName and inputSchema").
function schemaAccepts(ext, mutate) {
  const info = structuredClone(ext.info);
  mutate(info.input);
  return validateDiscoveryExtension({ ...ext, info }).valid;
}

/**
 * @param {object} paymentRequired decoded PaymentRequired (x402 v2)
 * @returns {{ok: boolean, errors: string[], warnings: string[], official: object, catalog: object|null}}
 */
export function validateBazaar(paymentRequired) {
  const errors = [];
  const warnings = [];
  const official = {};
  let catalog = null;
  const fail = (rule, msg) => errors.push(`${rule}: ${msg}`);

  if (!isObject(paymentRequired) || paymentRequired.x402Version !== 2) {
    fail("x402", "not an x402 v2 PaymentRequired (x402Version must be 2)");
    return { ok: false, errors, warnings, official, catalog };
  }
  const ext = paymentRequired.extensions?.[BAZAAR.key];
  if (!isObject(ext)) {
    fail("bazaar.md", "PaymentRequired.extensions.bazaar is missing (no discovery info, the Bazaar cannot list it)");
    return { ok: false, errors, warnings, official, catalog };
  }
  if (!isObject(ext.info) || !isObject(ext.schema)) {
    fail("bazaar.md", "extensions.bazaar must be an object with `info` and `schema`");
    return { ok: false, errors, warnings, official, catalog };
  }

  // 1. Official: protocol-level invariants (type http|mcp, method, bodyType, toolName, transport).
  official.spec = validateDiscoveryExtensionSpec(ext);
  for (const e of official.spec.errors ?? []) fail("validateDiscoveryExtensionSpec", e);

  // 2. Official: `info` validated against `schema` (Ajv 2020-12, no external $ref/$id).
  official.schema = validateDiscoveryExtension(ext);
  for (const e of official.schema.errors ?? []) fail("validateDiscoveryExtension", e);

  // 3. Official: the facilitator's extraction from the PaymentPayload a client builds by echoing
  //    the server's extensions (x402Client.createPaymentPayload does exactly this).
  const accepted = Array.isArray(paymentRequired.accepts) ? paymentRequired.accepts[0] : undefined;
  const payload = {
    x402Version: 2,
    resource: paymentRequired.resource,
    accepted,
    payload: {},
    extensions: paymentRequired.extensions,
  };
  const warn = console.warn;
  const extractorWarnings = [];
  console.warn = (...a) => extractorWarnings.push(a.join(" "));
  try {
    catalog = extractDiscoveryInfo(payload, accepted, true);
  } catch (e) {
    fail("extractDiscoveryInfo", e instanceof Error ? e.message : String(e));
  } finally {
    console.warn = warn;
  }
  official.extract = { warnings: extractorWarnings };
  if (!catalog && errors.length === 0) {
    fail("extractDiscoveryInfo", `returned null (nothing would be catalogued) ${extractorWarnings.join("; ")}`);
  }
  if (catalog) {
    // what would be catalogued, without the echoed extensions (large)
    const { extensions: _omit, ...rest } = catalog;
    catalog = rest;
  }

  // 4. bazaar.md rules the official code enforces only by dropping the field (soft-drop).
  const input = ext.info.input ?? {};
  if (ext.schema.$schema !== DRAFT_2020_12) {
    fail("bazaar.md", `schema.$schema must be ${DRAFT_2020_12} ("Must use JSON Schema Draft 2020-12"), got ${JSON.stringify(ext.schema.$schema)}`);
  }
  if (input.type === "http") {
    if (typeof input.method !== "string") {
      fail("bazaar.md", "info.input.method is required for HTTP endpoints");
    } else if (BODY_METHODS.has(input.method)) {
      if (input.bodyType === undefined || input.body === undefined) {
        fail("bazaar.md", `a ${input.method} endpoint needs info.input.bodyType and info.input.body`);
      }
    } else if (!QUERY_METHODS.has(input.method)) {
      fail("bazaar.md", `info.input.method ${input.method} is not an HTTP method the Bazaar knows`);
    }
  }
  if ("routeTemplate" in ext && !isValidRouteTemplate(ext.routeTemplate)) {
    fail("isValidRouteTemplate", `routeTemplate ${JSON.stringify(ext.routeTemplate)} is invalid (the facilitator falls back to the concrete URL)`);
  }
  // The declared schema must actually constrain the discriminators (bazaar.md "Schema Validation").
  if (official.schema.valid) {
    if (schemaAccepts(ext, (i) => { i.type = "not-" + i.type; })) {
      fail("bazaar.md", "schema does not constrain info.input.type (must be const http/mcp)");
    }
    if (input.type === "http" && schemaAccepts(ext, (i) => { i.method = BODY_METHODS.has(i.method) ? "GET" : "POST"; })) {
      fail("bazaar.md", "schema does not constrain info.input.method to the method enum of its kind");
    }
    if (input.type === "mcp") {
      if (schemaAccepts(ext, (i) => { delete i.toolName; })) fail("bazaar.md", "schema does not require info.input.toolName");
      if (schemaAccepts(ext, (i) => { delete i.inputSchema; })) fail("bazaar.md", "schema does not require info.input.inputSchema");
    }
  }

  // 5. Service metadata on `resource` (bazaar.md "Service Metadata"): the SDK drops invalid fields
  //    silently; here an invalid one is an error.
  const resource = paymentRequired.resource ?? {};
  if ("serviceName" in resource && !isValidServiceName(resource.serviceName)) {
    fail("bazaar.md", `resource.serviceName must be 1-32 printable ASCII characters, got ${JSON.stringify(resource.serviceName)}`);
  }
  if ("tags" in resource) {
    const kept = sanitizeTags(resource.tags) ?? [];
    if (!Array.isArray(resource.tags) || resource.tags.length > 5 || kept.length !== resource.tags.length) {
      fail("bazaar.md", `resource.tags must be at most 5 distinct (case-insensitive) printable-ASCII strings of 1-32 characters; the facilitator would keep ${JSON.stringify(kept)} of ${JSON.stringify(resource.tags)}`);
    }
  }
  if ("iconUrl" in resource && !isValidIconUrl(resource.iconUrl)) {
    fail("bazaar.md", `resource.iconUrl ${JSON.stringify(resource.iconUrl)} would be dropped (absolute public http(s) URL, no IP or localhost, at most 2048 characters)`);
  }
  if (typeof resource.description === "string" && codePoints(resource.description) > MAX_DESCRIPTION) {
    fail("x402#2993", `resource.description has ${codePoints(resource.description)} characters; over ${MAX_DESCRIPTION} the Bazaar refuses the resource`);
  }
  if (typeof input.description === "string" && codePoints(input.description) > MAX_DESCRIPTION) {
    warnings.push(`info.input.description has ${codePoints(input.description)} characters (over ${MAX_DESCRIPTION})`);
  }
  if (typeof resource.url === "string" && !/^https?:\/\//.test(resource.url)) {
    warnings.push(`resource.url ${resource.url} is not http(s): the facilitator catalogues it as ${JSON.stringify(catalog?.resourceUrl)}`);
  }

  return { ok: errors.length === 0, errors, warnings, official, catalog };
}
