#!/usr/bin/env node
// Validate a JSON document against a JSON Schema with Ajv, printing every error.
//
//   node validate-schema.mjs <schema.json> <document.json> [--definition NAME]
//
// The dialect follows the schema's `$schema` (draft 2020-12, 2019-09, or draft-07 when absent);
// formats (uri, date-time, ...) are checked with ajv-formats. `--definition NAME` validates
// against `#/definitions/NAME` (or `#/$defs/NAME`) of a bundle that has no root schema, e.g.
// `--definition "Agent Card"` for the A2A bundle.
//
// Bundles made of separately generated files (the A2A one, from protoc-gen-jsonschema) keep
// references between the original files, e.g. {"$ref": "a2a.v1.AgentInterface.jsonschema.json"}.
// Each such reference is resolved to the bundle definition of the same message (its `title`
// without spaces, e.g. "Agent Interface"); a reference that matches no definition is an error,
// never skipped.
//
// Prints {valid, schema, definition, errors: [{path, message, keyword, params}]} as JSON; exit 0
// valid, 1 invalid, 2 when the schema or document cannot be loaded or compiled.
import Ajv from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { printJson, readJson } from "./lib/io.mjs";

function usage(msg) {
  process.stderr.write(`${msg}\nusage: validate-schema.mjs <schema.json> <document.json> [--definition NAME]\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let definition;
const di = args.indexOf("--definition");
if (di >= 0) {
  definition = args[di + 1];
  if (!definition) usage("--definition needs a name");
  args.splice(di, 2);
}
if (args.length !== 2) usage("expected two paths");
const [schemaPath, docPath] = args;

let schema, doc;
try {
  schema = readJson(schemaPath);
  doc = readJson(docPath);
} catch (e) {
  usage(`cannot read JSON: ${e.message}`);
}

// The dialect: the root's $schema, else (a bundle) the selected definition's.
const defs = schema.definitions ?? schema.$defs ?? {};
const dialect = schema.$schema ?? (definition ? defs[definition]?.$schema : undefined) ?? "";
const AjvClass = dialect.includes("2020-12") ? Ajv2020 : dialect.includes("2019-09") ? Ajv2019 : Ajv;
// strict: false -> annotation keywords some generators emit (`example`, `discriminator`) are
// ignored, as JSON Schema says unknown keywords are.
const ajv = new AjvClass({ strict: false, allErrors: true, verbose: false });
addFormats(ajv);

// Register every cross-file reference of a bundle under its own name (see the header comment).
const external = new Set();
(function collect(node) {
  if (Array.isArray(node)) return node.forEach(collect);
  if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string" && !v.startsWith("#") && !/^[a-z]+:\/\//i.test(v)) external.add(v);
      else collect(v);
    }
  }
})(schema);
const byMessage = new Map(
  Object.values(defs)
    .filter((d) => d && typeof d.title === "string")
    .map((d) => [d.title.replace(/\s+/g, ""), d]),
);
const unresolved = [];
for (const ref of external) {
  // "a2a.v1.AgentInterface.jsonschema.json" -> "AgentInterface"; "google.protobuf.Struct..." -> "Struct"
  const message = ref.replace(/\.jsonschema\.json$|\.json$/, "").split(".").pop();
  const target = byMessage.get(message);
  if (!target) {
    unresolved.push(ref);
    continue;
  }
  ajv.addSchema({ ...target, $id: ref });
}
if (unresolved.length) usage(`unresolvable $ref in ${schemaPath}: ${unresolved.join(", ")}`);

let validate;
try {
  if (definition) {
    const target = defs[definition];
    if (!target) usage(`no definition ${JSON.stringify(definition)} in ${schemaPath}`);
    // Compile the definition itself under a relative id like the registered ones, so that its
    // cross-file refs (registered above) resolve as siblings.
    validate = ajv.compile({ ...target, $id: `aov.definition.${definition.replace(/\W+/g, "")}.json` });
  } else {
    validate = ajv.compile(schema);
  }
} catch (e) {
  usage(`cannot compile ${schemaPath}: ${e.message}`);
}

const valid = validate(doc);
const errors = (validate.errors ?? []).map((e) => ({
  path: e.instancePath || "/",
  message: e.message,
  keyword: e.keyword,
  params: e.params,
}));
printJson({ valid, schema: schemaPath, definition: definition ?? null, dialect: dialect || "draft-07 (default)", errors });
process.exit(valid ? 0 : 1);
