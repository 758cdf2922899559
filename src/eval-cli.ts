// `build-api eval`: runs an eval against a service and exits by its gate, for CI (docs/evals.md).
// It is a client of the HTTP API like any other: the service's URL (--url, BUILD_API_URL, or this
// machine's PORT), a token in BUILD_API_TOKEN (a token on the command line shows in the process
// list). Exit codes: 0 the gate passed, 1 it did not (or the eval failed), 2 the command could not
// run it (usage, the service unreachable or refusing the request).
import { parseArgs } from 'node:util';
import type { components } from '../generated/api';

type Eval = components['schemas']['Eval'];
type EvalRequest = components['schemas']['EvalRequest'];

export const EVAL_USAGE = `  build-api eval --agent REF --dataset SLUG [--version N] [--dataset-version N] [--repeats N] [--judge MODEL]
                 [--baseline EVAL_ID] [--max-regressions N] [--min-pass-rate R] [--allow-errored] [--allow-skipped]
                 [--url URL] [--timeout SECONDS]        (the token in BUILD_API_TOKEN)`;

/** The command could not run the eval: exit 2 with this message. `status`: the service's answer, when it gave one. */
export class EvalCommandError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Answers worth asking again while polling: rate limited, or the service briefly unavailable. */
const TRANSIENT = new Set([429, 502, 503, 504]);

const POLL_MS = 1000;

function number(text: string | undefined, name: string, min: number, max: number, integer = true): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new EvalCommandError(`--${name}: must be a ${integer ? 'whole ' : ''}number from ${min} to ${max}`);
  }
  return value;
}

/** The request the options ask for: the gate always sent, so the exit code says whether the eval is good enough. */
export function evalRequest(values: Record<string, string | boolean | undefined>): { agent: string; body: EvalRequest } {
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const agent = text('agent');
  const dataset = text('dataset');
  if (!agent) throw new EvalCommandError("--agent: required (the agent's slug or id)");
  if (!dataset) throw new EvalCommandError("--dataset: required (the dataset's slug or id)");
  const maxRegressions = number(text('max-regressions'), 'max-regressions', 0, 1_000_000);
  const baseline = text('baseline');
  const gate = {
    ...(text('min-pass-rate') !== undefined && { min_pass_rate: number(text('min-pass-rate'), 'min-pass-rate', 0, 1, false) }),
    ...(values['allow-errored'] === true && { errored_fails: false }),
    ...(values['allow-skipped'] === true && { skipped_fails: false }),
    ...(baseline !== undefined && { baseline, max_regressions: maxRegressions ?? 0 }),
  };
  if (maxRegressions !== undefined && baseline === undefined) throw new EvalCommandError('--max-regressions: needs --baseline');
  const body: EvalRequest = {
    dataset,
    ...(text('version') !== undefined && { version: number(text('version'), 'version', 1, 2 ** 31 - 1) }),
    ...(text('dataset-version') !== undefined && { dataset_version: number(text('dataset-version'), 'dataset-version', 1, 2 ** 31 - 1) }),
    ...(text('repeats') !== undefined && { repeats: number(text('repeats'), 'repeats', 1, 5) }),
    ...(text('judge') !== undefined && { judge: text('judge') }),
    gate,
  };
  return { agent, body };
}

/** The URL without the slashes it ends with (by hand: `/\/+$/` is quadratic on a long run of slashes). */
function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}

/** The results as a table: one line per case and repeat, the criteria's outcomes counted. */
export function resultTable(evaluation: Eval): Record<string, string | number>[] {
  return evaluation.results.map((r) => {
    const count = (outcome: string) => r.criteria.filter((c) => c.outcome === outcome).length;
    const failedIds = r.criteria.filter((c) => c.outcome !== 'passed').map((c) => `${c.criterion_id} ${c.outcome}`);
    return {
      case: r.case_id,
      repeat: r.repeat,
      run: r.run_status ?? '-',
      passed: count('passed'),
      failed: count('failed'),
      errored: count('errored'),
      skipped: count('skipped'),
      'not passed': failedIds.join(', ').slice(0, 100),
    };
  });
}

async function call(url: string, token: string, method: string, path: string, body?: unknown): Promise<{ data: Eval }> {
  let res: Response;
  try {
    res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new EvalCommandError(`${method} ${path}: the service at ${url} could not be reached (${(err as Error).message})`);
  }
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    throw new EvalCommandError(`${method} ${path}: the reply was cut off (${(err as Error).message})`);
  }
  if (!res.ok) throw new EvalCommandError(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`, res.status);
  try {
    return JSON.parse(text) as { data: Eval };
  } catch {
    throw new EvalCommandError(`${method} ${path}: the reply is not JSON`);
  }
}

/** Runs the eval the arguments describe; the exit code its gate gives. */
export async function evalCommand(args: string[], env: NodeJS.ProcessEnv = process.env, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const text = { type: 'string' } as const;
  const flag = { type: 'boolean' } as const;
  const { values } = parseArgs({
    args,
    options: {
      agent: text,
      dataset: text,
      version: text,
      'dataset-version': text,
      repeats: text,
      judge: text,
      baseline: text,
      'max-regressions': text,
      'min-pass-rate': text,
      url: text,
      timeout: text,
      'allow-errored': flag,
      'allow-skipped': flag,
    },
  });
  const { agent, body } = evalRequest(values);
  const token = env.BUILD_API_TOKEN;
  if (!token) throw new EvalCommandError("BUILD_API_TOKEN: required, a token of the service (npx build-api token …, or your issuer's)");
  const url = withoutTrailingSlashes(values.url ?? env.BUILD_API_URL ?? `http://localhost:${env.PORT || 8080}`);
  const deadline = Date.now() + (number(values.timeout, 'timeout', 1, 86_400) ?? 1800) * 1000;
  let evaluation = (await call(url, token, 'POST', `/api/build/agents/${encodeURIComponent(agent)}/evals`, body)).data;
  out.write(
    `eval ${evaluation.id}: agent ${evaluation.agent.slug} v${evaluation.agent.version}, dataset ${evaluation.dataset.slug} v${evaluation.dataset.version}\n`,
  );
  while (evaluation.status === 'queued' || evaluation.status === 'running') {
    if (Date.now() > deadline) throw new EvalCommandError(`eval ${evaluation.id} did not finish within --timeout; it goes on in the service`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    try {
      evaluation = (await call(url, token, 'GET', `/api/build/evals/${evaluation.id}`)).data;
    } catch (err) {
      // A read refused for a moment (429, 503) or not answered is asked again until --timeout.
      if (!(err instanceof EvalCommandError) || (err.status !== undefined && !TRANSIENT.has(err.status))) throw err;
    }
  }
  const { summary, gate_result: gate } = evaluation;
  out.write(`${tableText(resultTable(evaluation))}\n`);
  const rate = summary.pass_rate === null ? 'none' : `${Math.round(summary.pass_rate * 1000) / 10}%`;
  out.write(
    `pass rate ${rate}; ${summary.criteria.passed} passed, ${summary.criteria.failed} failed, ${summary.criteria.errored} errored, ${summary.criteria.skipped} skipped; credits ${summary.credits.agent} agent + ${summary.credits.judge} judge\n`,
  );
  if (evaluation.status === 'failed') {
    out.write(`eval failed: ${evaluation.error}\n`);
    return 1;
  }
  out.write(gate?.passed ? 'gate passed\n' : `gate failed: ${(gate?.reasons ?? ['no gate result']).join('; ')}\n`);
  return gate?.passed ? 0 : 1;
}

/** Rows as an aligned text table (columns padded to their widest cell). */
export function tableText(rows: Record<string, string | number>[]): string {
  if (!rows.length) return '(no results)';
  const columns = Object.keys(rows[0]!);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => String(r[c]))))].join('\n');
}
