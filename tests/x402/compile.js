#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// Compile a Solidity contract with solc-js (the pinned `solc` npm package, no download)
// and print its RUNTIME bytecode as 0x-hex on stdout (what anvil_setCode wants).
//
//   node compile.js [path/to/Contract.sol] [ContractName] [--json]
//
// Defaults: contracts/MockUSDC.sol, MockUSDC. With --json it prints
// {"contract", "solc", "runtime", "abi"} instead. Errors go to stderr, exit code 1.
"use strict";
const fs = require("fs");
const path = require("path");
const solc = require("solc");

const args = process.argv.slice(2).filter((a) => a !== "--json");
const asJson = process.argv.includes("--json");
const file = path.resolve(args[0] || path.join(__dirname, "contracts", "MockUSDC.sol"));
const name = args[1] || path.basename(file, ".sol");

const input = {
  language: "Solidity",
  sources: { [path.basename(file)]: { content: fs.readFileSync(file, "utf8") } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    // "cancun" runs on every anvil hardfork from cancun on; pinned so a future
    // solc default cannot emit opcodes the pinned anvil lacks.
    evmVersion: "cancun",
    outputSelection: { "*": { "*": ["abi", "evm.deployedBytecode.object"] } },
  },
};

const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors || []).filter((e) => e.severity === "error");
for (const e of out.errors || []) process.stderr.write((e.formattedMessage || e.message) + "\n");
if (errors.length) process.exit(1);

const unit = (out.contracts[path.basename(file)] || {})[name];
if (!unit || !unit.evm.deployedBytecode.object) {
  process.stderr.write(`contract ${name} not found in ${file}\n`);
  process.exit(1);
}
const runtime = "0x" + unit.evm.deployedBytecode.object;
if (asJson) {
  process.stdout.write(JSON.stringify({ contract: name, solc: solc.version(), runtime, abi: unit.abi }) + "\n");
} else {
  process.stdout.write(runtime + "\n");
}
