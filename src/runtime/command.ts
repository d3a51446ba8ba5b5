/**
 * Project commands (`npm ci`, `npm run build && npm run export`, `PORT=$PORT node server.js`) are
 * turned into argument arrays here, never handed to a shell: quotes ('…', "…", \x) group words,
 * `&&` runs the next step only when the previous one succeeded, leading `NAME=value` words set
 * variables for that step, and `$NAME` / `${NAME}` expand from the step's environment (`${NAME:-default}` and `${NAME:=default}` as in
 * a POSIX shell; `:=` also gives NAME its default for the later words of the command). Everything a
 * shell would do beyond that (pipes, `;`, redirections, globs, `$(…)`, backticks) is refused with a
 * message naming the operator.
 */
export interface CommandStep {
  argv: string[];
  env: Record<string, string>;
}

export class CommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandError';
  }
}

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function parseCommand(input: string, env: Record<string, string | undefined> = {}): CommandStep[] {
  if (typeof input !== 'string' || !input.trim()) throw new CommandError('the command is empty');
  if (input.length > 4096) throw new CommandError('the command is too long');
  const steps: CommandStep[] = [];
  let words: { text: string; quoted: boolean; assign: boolean }[] = [];
  let cur = '';
  let inWord = false;
  let quotedWord = false;
  /** What the word held before its first quote (an assignment is `NAME=` written unquoted). */
  let beforeQuote: string | null = null;
  let i = 0;

  /** Names given a value by `${NAME:=default}` (for the rest of the command). */
  const assigned: Record<string, string> = {};
  const expand = (name: string): string => {
    if (name in assigned) return assigned[name]!;
    for (let k = words.length - 1; k >= 0; k--) {
      const w = words[k]!;
      if (w.assign && w.text.startsWith(name + '=')) return w.text.slice(name.length + 1);
    }
    return env[name] ?? '';
  };
  const endWord = () => {
    if (inWord) {
      const assign = !words.some((w) => !w.assign) && /^[A-Za-z_][A-Za-z0-9_]*=/.test(beforeQuote ?? cur);
      words.push({ text: cur, quoted: quotedWord, assign });
    }
    cur = '';
    inWord = false;
    quotedWord = false;
    beforeQuote = null;
  };
  const endStep = () => {
    endWord();
    const stepEnv: Record<string, string> = {};
    const argv: string[] = [];
    for (const w of words) {
      if (w.assign && argv.length === 0) {
        const eq = w.text.indexOf('=');
        stepEnv[w.text.slice(0, eq)] = w.text.slice(eq + 1);
      } else argv.push(w.text);
    }
    if (argv.length === 0) throw new CommandError('a step of the command has no program to run');
    steps.push({ argv, env: stepEnv });
    words = [];
  };
  const readVar = (): string => {
    // at input[i] === '$'
    if (input[i + 1] === '{') {
      const close = input.indexOf('}', i + 2);
      if (close < 0) throw new CommandError('unclosed ${ in the command');
      const inner = input.slice(i + 2, close);
      i = close + 1;
      // `${NAME}`, `${NAME:-default}` (the default when NAME is unset or empty) and
      // `${NAME:=default}` (the same, and NAME keeps the default for the rest of the command).
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?::([-=])(.*))?$/s.exec(inner);
      if (!m) throw new CommandError(`unsupported expansion \${${inner}} in the command (Berth expands \${NAME}, \${NAME:-default} and \${NAME:=default})`);
      const [, name, op, fallback] = m as unknown as [string, string, string | undefined, string | undefined];
      const value = expand(name);
      if (!op || value !== '') return value;
      if (/[$`\\]/.test(fallback ?? '')) throw new CommandError(`the default of \${${name}:${op}...} must be plain text`);
      if (op === '=') assigned[name] = fallback ?? '';
      return fallback ?? '';
    }
    if (input[i + 1] === '(') throw new CommandError('command substitution $( ) is not supported; write the steps with &&');
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(input.slice(i + 1));
    if (!m) {
      i += 1;
      return '$';
    }
    i += 1 + m[0].length;
    return expand(m[0]);
  };

  while (i < input.length) {
    const c = input[i]!;
    if (c === ' ' || c === '\t' || c === '\n') {
      endWord();
      i++;
      continue;
    }
    if (c === '&' && input[i + 1] === '&') {
      endStep();
      i += 2;
      continue;
    }
    if (c === '|' || c === ';' || c === '>' || c === '<' || c === '`' || c === '&' || c === '(' || c === ')') {
      throw new CommandError(`the command uses "${c === '&' ? '&' : c}", which needs a shell; Berth runs commands without one (use && between steps, or put the logic in a script)`);
    }
    if ((c === "'" || c === '"') && !quotedWord) beforeQuote = cur;
    if (c === "'") {
      const close = input.indexOf("'", i + 1);
      if (close < 0) throw new CommandError('unclosed single quote in the command');
      cur += input.slice(i + 1, close);
      inWord = true;
      quotedWord = true;
      i = close + 1;
      continue;
    }
    if (c === '"') {
      i++;
      inWord = true;
      quotedWord = true;
      for (;;) {
        if (i >= input.length) throw new CommandError('unclosed double quote in the command');
        const d = input[i]!;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < input.length && '"\\$`'.includes(input[i + 1]!)) {
          cur += input[i + 1];
          i += 2;
          continue;
        }
        if (d === '`') throw new CommandError('backticks need a shell; Berth runs commands without one');
        if (d === '$') {
          cur += readVar();
          continue;
        }
        cur += d;
        i++;
      }
      continue;
    }
    if (c === '\\') {
      if (i + 1 < input.length) cur += input[i + 1];
      inWord = true;
      i += 2;
      continue;
    }
    if (c === '$') {
      cur += readVar();
      inWord = true;
      continue;
    }
    if ((c === '*' || c === '?') && !quotedWord) {
      throw new CommandError(`the command uses the glob "${c}", which needs a shell; quote it or list the files`);
    }
    cur += c;
    inWord = true;
    i++;
  }
  endStep();
  return steps;
}
