// SPDX-License-Identifier: GPL-2.0
// Raw JSON-RPC lines against `llmprof mcp`: each malformed, huge, deep or
// mistyped message gets exactly one error of the right kind (or, for a
// tool's arguments, a result with isError) and the server keeps serving;
// then a client hangs up in the middle of a profile and the server stops it:
// the BPF programs it loaded are gone within seconds.
// argv: LLMPROF WORKDIR PID
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const [llmprof, work, pid] = process.argv.slice(2);
const args = ["mcp", "--allow-root-commands", "--root", work];

function check(cond, what) {
  if (!cond) {
    console.error(`FAIL: ${what}`);
    process.exit(1);
  }
}

const call = (id, name, a) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: a } });
// [line, what the reply must be]: a JSON-RPC error code, or "tool" for a
// result with isError, "ok" for a result without, null for no reply.
const cases = [
  ["this is not json", -32700],
  ["{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", -32700],
  ["[".repeat(100000) + "]".repeat(100000), -32700],
  ["{\"a\":".repeat(50000) + "1" + "}".repeat(50000), -32700],
  ["x".repeat(17 << 20), -32600],
  ["[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]", -32600],
  ["42", -32600],
  ["{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}", -32600],
  ["{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":7}", -32600],
  ["{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"no/such/method\"}", -32601],
  ["{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":[]}", -32602],
  ["{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":5}}", -32602],
  ["{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"profile\",\"arguments\":\"x\"}}", -32602],
  ["{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}", -32602],
  ["{\"jsonrpc\":\"2.0\",\"id\":9,\"id\":10,\"method\":\"ping\"}", -32700],
  [call(11, "profile", { pid: Number(pid), duration: "x" }), "tool"],
  [call(12, "profile", { command: [1, 2] }), "tool"],
  [call(13, "profile", { pid: -5 }), "tool"],
  [call(14, "profile", { pid: 1e300 }), "tool"],
  [call(15, "profile", { command: ["true"], duration: 1e9 }), "tool"],
  [call(16, "profile", { command: "true" }), "tool"],
  [call(17, "report", { path: ["base.folded"] }), "tool"],
  // A NUL in a string would cut names short: refused as the parser reads it.
  [call(18, "report", { path: "a\u0000b" }), -32700],
  [call(19, "diff", { base: "base.folded" }), "tool"],
  [call(20, "findings", { path: "base.folded", verbose: "yes" }), "tool"],
  ["{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}", null],
  // Sent without waiting: answered in order.
  [call(21, "report", { path: "base.folded" }), "ok"],
  [call(22, "report", { path: "base.folded", top: 1 }), "ok"],
  ["{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"ping\"}", "ok"],
];

const raw = spawn(llmprof, args, { stdio: ["pipe", "pipe", "inherit"] });
let out = "";
raw.stdout.on("data", (d) => (out += d));
for (const [line] of cases)
  raw.stdin.write(line + "\n");
raw.stdin.end();
await new Promise((resolve) => raw.on("close", resolve));
const replies = out.trim().split("\n").map((l) => JSON.parse(l));
const expected = cases.filter(([, want]) => want !== null);
check(replies.length === expected.length,
  `${replies.length} replies to ${expected.length} requests: ${out.slice(0, 2000)}`);
expected.forEach(([line, want], i) => {
  const r = replies[i], what = `reply ${i} to ${line.slice(0, 80)}`;
  if (typeof want === "number")
    check(r.error && r.error.code === want, `${what}: ${JSON.stringify(r).slice(0, 300)}`);
  else
    check(r.result && (r.result.isError === true) === (want === "tool"),
      `${what}: ${JSON.stringify(r).slice(0, 300)}`);
});
check(replies[replies.length - 1].id === 23, "the last reply answers the last request");
console.log(`${cases.length} messages, ${replies.length} replies as expected`);

// A client that hangs up mid-profile.
const programs = () =>
  new Set(JSON.parse(execFileSync("bpftool", ["-j", "prog", "show"])).map((p) => p.id));
// The BPF programs the server's process tree holds (other tests on the
// machine load theirs too): from its descendants' descriptors.
const parentOf = (p) => {
  try {
    return Number(readFileSync(`/proc/${p}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[1]);
  } catch {
    return 0;
  }
};
const heldBy = (root) => {
  const ids = new Set();
  for (const p of readdirSync("/proc").filter((d) => /^[0-9]+$/.test(d))) {
    let q = Number(p);
    for (let depth = 0; q > 1 && q !== root && depth < 8; depth++) q = parentOf(q);
    if (q !== root) continue;
    let fds = [];
    try {
      fds = readdirSync(`/proc/${p}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = readFileSync(`/proc/${p}/fdinfo/${fd}`, "utf8").match(/^prog_id:\s+(\d+)/m);
        if (m) ids.add(Number(m[1]));
      } catch {}
    }
  }
  return [...ids];
};
const server = spawn(llmprof, args, { stdio: ["pipe", "pipe", "inherit"] });
server.stdin.write(call(1, "profile", { pid: Number(pid), duration: 60, gpu: false }) + "\n");
let loaded = [];
for (let i = 0; i < 100 && loaded.length === 0; i++) {
  await new Promise((r) => setTimeout(r, 100));
  loaded = heldBy(server.pid);
}
check(loaded.length > 0, "the profile loaded no BPF program");
await new Promise((r) => setTimeout(r, 1500));
loaded = heldBy(server.pid);
const hungUp = Date.now();
server.stdin.end();
const code = await new Promise((resolve) => server.on("close", resolve));
const seconds = (Date.now() - hungUp) / 1000;
console.log(`hung up: the server exited ${code} after ${seconds.toFixed(2)} s`);
check(seconds < 20, `the profile went on ${seconds} s after its client hung up`);
const left = [...programs()].filter((id) => loaded.includes(id));
check(left.length === 0, `BPF programs left after the client hung up: ${left}`);
console.log(`${loaded.length} BPF programs loaded, none left`);
console.log("PASS");
