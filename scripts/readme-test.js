#!/usr/bin/env node
// The README as a stranger meets it (issue 22). Tests that prepare their own directories and
// environment cannot see that: a fresh clone's `npm start` once crashed while every test passed.
//
// For each store, side by side, on a fresh copy of this checkout (its committed and uncommitted files, nothing
// that .gitignore excludes: no node_modules, no dist, no data directory):
//   sqlite    the README's first command as written (`npm ci && npm start`), with no environment but
//             PATH and HOME;
//   postgres  docs/deployment.md's quick start as written, its DATABASE_URL pointed at a throwaway
//             cluster (scripts/pg-cluster.js);
// then, once the service answers, the README's "A first request" and "Test runs" blocks as written,
// in one bash session with the server's environment (token, create, read, replace, a test run
// followed to its end, a parked run approved and followed to its end), and checks what they did
// through the API. The commands are read from the Markdown files, so the docs and this test cannot
// drift apart. The SQLite pass uses the documented port 8080 unless it is taken; the PostgreSQL
// pass, beside it, and any pass whose port is taken, get free ones passed the documented way (PORT,
// METRICS_PORT, SMTP_PORT), and the blocks' URLs follow them.
//
//   node scripts/readme-test.js [--only sqlite|postgres] [--keep]    (--keep: leave the copies in /tmp)
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('./free-port');
const { startCluster } = require('./pg-cluster');

const root = path.join(__dirname, '..');
const DOCUMENTED_PORT = 8080;
const DOCUMENTED_METRICS_PORT = 9464; // METRICS_PORT's default (README)
const INSTALL_AND_START_MS = 15 * 60_000; // npm ci compiles better-sqlite3 and builds dist/ and the docs page
const BLOCKS_MS = 3 * 60_000;
const STOP_MS = 20_000;

/** The ```sh blocks of a Markdown file, each with the `## ` heading it sits under. */
function shBlocks(file) {
  const blocks = [];
  let heading = null;
  let open = null;
  for (const line of fs.readFileSync(path.join(root, file), 'utf8').split('\n')) {
    if (open) {
      if (line.startsWith('```')) {
        blocks.push({ heading, text: open.join('\n') });
        open = null;
      } else open.push(line);
    } else if (line.startsWith('## ')) heading = line.slice(3).trim();
    else if (line.trim() === '```sh') open = [];
  }
  return blocks;
}

function blocksUnder(file, heading) {
  const found = shBlocks(file).filter((b) => b.heading === heading);
  if (!found.length) throw new Error(`${file}: no sh block under "## ${heading}"`);
  return found.map((b) => b.text);
}

/** The README's first command: the first line of its first sh block, without its comment. */
function readmeStartCommand() {
  const first = shBlocks('README.md')[0];
  if (!first) throw new Error('README.md: no sh block');
  const command = first.text
    .split('\n')[0]
    .replace(/\s+#.*$/, '')
    .trim();
  if (!/\bnpm start$/.test(command)) throw new Error(`README.md: the first command should start the service, got '${command}'`);
  return command;
}

/** A fresh copy of the checkout: what `git clone` would give, plus uncommitted edits. */
function freshCopy(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `build-readme-${name}-`));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    const from = path.join(root, file);
    if (!fs.existsSync(from)) continue; // deleted in the work tree, not yet committed
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.cpSync(from, path.join(dir, file), { preserveTimestamps: true });
  }
  return dir;
}

function portIsFree(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * The documented ports (the API's, the metrics'), or free ones passed the documented way. A pass
 * that runs beside the one on the documented ports takes free ones for all of its listeners
 * (`others`: the SMTP listener's too, whose default the other pass holds).
 */
async function choosePorts(log, { others = false } = {}) {
  if (others) {
    const [port, metrics, smtp] = [await freePort(), await freePort(), await freePort()];
    log(`  beside the other pass: PORT=${port} METRICS_PORT=${metrics} SMTP_PORT=${smtp}, and the blocks' URLs follow them`);
    return { port, env: { PORT: String(port), METRICS_PORT: String(metrics), SMTP_PORT: String(smtp) } };
  }
  const metricsEnv = (await portIsFree(DOCUMENTED_METRICS_PORT)) ? {} : { METRICS_PORT: String(await freePort()) };
  if (metricsEnv.METRICS_PORT) log(`  port ${DOCUMENTED_METRICS_PORT} is taken here: METRICS_PORT=${metricsEnv.METRICS_PORT}`);
  if (await portIsFree(DOCUMENTED_PORT)) return { port: DOCUMENTED_PORT, env: metricsEnv };
  const port = await freePort();
  log(`  port ${DOCUMENTED_PORT} is taken here: PORT=${port}, and the blocks' URLs follow it`);
  return { port, env: { PORT: String(port), ...metricsEnv } };
}

/** What a stranger's shell has: no project variables, no npm_config_* from an enclosing npm run. */
function strangersEnv(extra) {
  return { PATH: process.env.PATH, HOME: process.env.HOME, ...extra };
}

/** Runs `command` in `dir` as its own process group; resolves once http://127.0.0.1:port/readyz answers 200. */
async function startService(dir, command, env, port, logFile) {
  const log = fs.openSync(logFile, 'w');
  const child = spawn('bash', ['-c', command], { cwd: dir, env, detached: true, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  let exited = null;
  child.once('exit', (code, signal) => (exited = { code, signal }));
  const deadline = Date.now() + INSTALL_AND_START_MS;
  for (;;) {
    if (exited) throw new Error(`'${command}' exited (${exited.code ?? exited.signal}) before serving:\n${tail(logFile)}`);
    if (Date.now() > deadline) {
      stopGroup(child);
      throw new Error(`'${command}' did not serve within ${INSTALL_AND_START_MS / 60_000} minutes:\n${tail(logFile)}`);
    }
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return { child, exited: () => exited };
    await new Promise((r) => setTimeout(r, 500));
  }
}

function stopGroup(child) {
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
}

/** SIGTERM to the service's process group; it must stop within STOP_MS. */
async function stopService(service, logFile) {
  stopGroup(service.child);
  const deadline = Date.now() + STOP_MS;
  while (!service.exited()) {
    if (Date.now() > deadline) {
      process.kill(-service.child.pid, 'SIGKILL');
      throw new Error(`the service did not stop within ${STOP_MS / 1000} s of SIGTERM:\n${tail(logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function tail(file, lines = 30) {
  return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

const MARK = '[readme-test]';

/** The README's blocks in one bash session; resolves with their output and the session's TOKEN and RUN. */
function runBlocks(dir, blocks, env) {
  const script = ['set -euo pipefail', ...blocks, `printf '\\n${MARK} %s %s\\n' "$TOKEN" "$RUN"`].join('\n');
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), BLOCKS_MS);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`the README's blocks failed (${code ?? signal}):\n${out}\n${err}`));
      const last = out.trimEnd().split('\n').pop() || '';
      const [mark, token, run] = last.split(' ');
      if (mark !== MARK) return reject(new Error(`the README's blocks printed no summary:\n${out}\n${err}`));
      resolve({ out, token, run });
    });
  });
}

function check(condition, message, detail) {
  if (!condition) throw new Error(`${message}${detail === undefined ? '' : `:\n${typeof detail === 'string' ? detail : JSON.stringify(detail, null, 2)}`}`);
}

/** What the blocks did, read back through the API. */
async function checkOutcome(port, { out, token, run }) {
  const api = async (p) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/build${p}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: await res.json() };
  };
  check(!/"error":\s*"/.test(out), 'a README command was answered with an error', out);

  const agent = await api('/agents/support-triage');
  check(agent.status === 200 && agent.body.data.name === 'Support triage (EU)', 'the agent was not created and replaced as the README says', agent);
  check(/"webhook_urls":\[\{"trigger_id":"[^"]+","url":"http:\/\/localhost:\d+\/hooks\//.test(out), 'the create did not show the webhook URL', out);

  const runs = await api('/runs');
  check(runs.status === 200, 'the run list did not answer', runs);
  const statuses = runs.body.data.filter((r) => r.agent?.slug === 'support-triage').map((r) => r.status);
  check(statuses.length === 2 && statuses.every((s) => s === 'succeeded'), 'the two test runs did not both succeed', runs.body.data);
  check((out.match(/^event: run\.finished$/gm) || []).length === 2, 'each followed event stream should end with run.finished', out);

  const approved = await api(`/runs/${run}`);
  const call = approved.body.data.tool_calls[0];
  check(
    call && call.tool === 'kv.set' && call.status === 'succeeded' && call.approval?.decision === 'approve',
    'the held kv.set call was not approved and executed',
    approved.body,
  );
  await checkSkillsWalkThrough(api, runs.body.data);
  await checkEventsWalkThrough(api);
  await checkWhatsAppWalkThrough(api);
  await checkEvalsWalkThrough(api, out);
}

/** What docs/evals.md's walk-through did: an eval of version 1 passing what it graded, and one of version 2 failing its gate by two regressions. */
async function checkEvalsWalkThrough(api, out) {
  const evals = (await api('/agents/order-desk/evals')).body.data;
  const [second, first] = evals;
  check(evals.length === 2 && first.status === 'finished' && first.summary.pass_rate === 1, "docs/evals.md's first eval did not pass what it graded", evals);
  check(
    second.status === 'finished' && second.agent.version === 2 && second.gate_result?.reasons[0] === '2 criteria regressed against the baseline; at most 0',
    "docs/evals.md's second eval did not fail its gate by two regressions",
    second,
  );
  check(out.includes('build-api eval exited with 1'), "docs/evals.md's CLI gate did not exit 1", out);
}

/** What docs/channels.md's WhatsApp walk-through did: one message received (its repeat none), one run that replied, the reply in the outbox. */
async function checkWhatsAppWalkThrough(api) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const messages = (await api('/agents/concierge/messages')).body.data;
    const received = messages.filter((m) => m.direction === 'received');
    const sent = messages.filter((m) => m.direction === 'sent');
    const run = received[0]?.run_id && (await api(`/runs/${received[0].run_id}`)).body.data;
    if (received.length === 1 && sent.length === 1 && run?.status === 'succeeded' && run.tool_calls[0]?.tool === 'whatsapp.reply') return;
    check(Date.now() < deadline, "docs/channels.md's WhatsApp message did not start one run that queued its reply", { messages, run });
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** What docs/triggers.md's app-event walk-through did: one run per app (the repeated Stripe event none), each succeeding. */
async function checkEventsWalkThrough(api) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const runs = (await api('/runs?source=app_event')).body.data.filter((r) => r.agent?.slug === 'event-listener');
    if (runs.length === 4 && runs.every((r) => r.status === 'succeeded')) return;
    check(Date.now() < deadline, "docs/triggers.md's deliveries did not start one succeeding run per app", runs);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** What docs/skills.md's walk-through did: a run that loaded both skills and called the workflow, whose child run succeeded. */
async function checkSkillsWalkThrough(api, runs) {
  const refunds = runs.filter((r) => r.agent?.slug === 'refunds');
  check(refunds.length === 1 && refunds[0].status === 'succeeded', "docs/skills.md's run did not succeed", runs);
  const run = (await api(`/runs/${refunds[0].id}`)).body.data;
  const loaded = JSON.stringify(run.skills_loaded);
  const expected = JSON.stringify([
    { name: 'refund-policy', source: 'workspace', version: '1' },
    { name: 'careful-writes', source: 'marketplace', version: '1.0' },
  ]);
  check(loaded === expected, "docs/skills.md's run did not record the skills it loaded", run);
  const childId = run.tool_calls[2]?.child_run_id;
  const child = childId && (await api(`/workflow-runs/${childId}`)).body.data;
  check(
    child && child.status === 'succeeded' && child.parent?.run_id === run.id && child.output === 'refund of A-1 recorded',
    "docs/skills.md's workflow call did not start a linked child run that succeeded",
    { run, child },
  );
}

/** One store's pass; `log` collects its lines (the passes run side by side and print in turn). */
async function pass(name, startCommand, shellExtra, { keep, ports, log }) {
  const started = Date.now();
  const dir = freshCopy(name);
  const logFile = path.join(os.tmpdir(), `build-readme-${name}-${process.pid}.log`);
  const { port, env: portEnv } = ports;
  const follow = (text) => (port === DOCUMENTED_PORT ? text : text.replaceAll(`localhost:${DOCUMENTED_PORT}`, `localhost:${port}`));
  // The service has only what its command sets; the blocks' shell has the server's environment, as the docs ask.
  const serviceEnv = strangersEnv(portEnv);
  const shellEnv = strangersEnv({ ...portEnv, ...shellExtra });
  log(`== ${name}: in ${dir}\n  $ ${startCommand.replaceAll('\n', '\n  $ ')}`);
  let service = null;
  try {
    service = await startService(dir, startCommand, serviceEnv, port, logFile);
    log(`  serving on ${port} after ${((Date.now() - started) / 1000).toFixed(0)} s; running the README's blocks`);
    const blocks = [
      ...blocksUnder('README.md', 'A first request'),
      ...blocksUnder('README.md', 'Test runs'),
      ...blocksUnder('docs/skills.md', 'A walk-through'),
      ...blocksUnder('docs/triggers.md', 'App events: a walk-through'),
      ...blocksUnder('docs/channels.md', 'WhatsApp: a walk-through'),
      ...blocksUnder('docs/evals.md', 'A walk-through'),
    ].map(follow);
    const outcome = await runBlocks(dir, blocks, shellEnv);
    await checkOutcome(port, outcome);
  } finally {
    if (service) await stopService(service, logFile);
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  }
  fs.rmSync(logFile, { force: true });
  log(
    `  ok: token, create, read, replace, a run followed to its end, a parked run approved and followed to its end, skills loaded and a workflow called as a tool, signed app events, a WhatsApp message answered, two versions evaluated and gated (${((Date.now() - started) / 1000).toFixed(0)} s)`,
  );
}

async function postgresPass(options) {
  const cluster = await startCluster();
  try {
    const [quickStart] = blocksUnder('docs/deployment.md', 'Quick start');
    if (!/postgres(ql)?:\/\/\S+/.test(quickStart)) throw new Error('docs/deployment.md: the quick start sets no DATABASE_URL');
    // The documented URL is an example; the test's database is the throwaway cluster's.
    const command = quickStart.replace(/postgres(ql)?:\/\/\S+/g, cluster.url);
    await pass('postgres', command, { DATABASE_URL: cluster.url }, options);
  } finally {
    await cluster.stop();
  }
}

/**
 * Both passes at once (each is mostly an `npm ci`, a compile that uses one core): the SQLite one on
 * the documented ports, the PostgreSQL one beside it on free ones. Each pass's lines are printed
 * when it ends; any failure fails the test once both have ended.
 */
async function main() {
  const args = process.argv.slice(2);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
  const keep = args.includes('--keep');
  const passes = [];
  const run = async (name, body) => {
    const lines = [];
    const log = (line) => lines.push(line);
    try {
      await body(log);
      return { name, lines };
    } catch (err) {
      return { name, lines, err };
    }
  };
  if (!only || only === 'sqlite')
    passes.push(run('sqlite', async (log) => pass('sqlite', readmeStartCommand(), {}, { keep, log, ports: await choosePorts(log) })));
  if (!only || only === 'postgres') {
    passes.push(run('postgres', async (log) => postgresPass({ keep, log, ports: await choosePorts(log, { others: !only }) })));
  }
  const failed = [];
  for (const { name, lines, err } of await Promise.all(passes)) {
    console.log(lines.join('\n'));
    if (err) {
      console.error(`readme-test (${name}): ${err.message}`);
      failed.push(name);
    }
  }
  if (failed.length) process.exit(1);
}

main().catch((err) => {
  console.error(`readme-test: ${err.message}`);
  process.exit(1);
});
