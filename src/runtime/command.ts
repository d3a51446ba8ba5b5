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
  return new CommandReader(input, env).read();
}

type Word = { text: string; quoted: boolean; assign: boolean };

/** One pass over a command's text, left to right: words into steps (what `parseCommand` answers). */
class CommandReader {
  private readonly steps: CommandStep[] = [];
  private words: Word[] = [];
  private cur = '';
  private inWord = false;
  private quotedWord = false;
  /** What the word held before its first quote (an assignment is `NAME=` written unquoted). */
  private beforeQuote: string | null = null;
  private i = 0;
  /** Names given a value by `${NAME:=default}` (for the rest of the command). */
  private readonly assigned: Record<string, string> = {};

  constructor(
    private readonly input: string,
    private readonly env: Record<string, string | undefined>,
  ) {}

  read(): CommandStep[] {
    const input = this.input;
    while (this.i < input.length) {
      const c = input[this.i]!;
      if (c === ' ' || c === '\t' || c === '\n') {
        this.endWord();
        this.i++;
        continue;
      }
      if (c === '&' && input[this.i + 1] === '&') {
        this.endStep();
        this.i += 2;
        continue;
      }
      if (c === '|' || c === ';' || c === '>' || c === '<' || c === '`' || c === '&' || c === '(' || c === ')') {
        throw new CommandError(`the command uses "${c === '&' ? '&' : c}", which needs a shell; Berth runs commands without one (use && between steps, or put the logic in a script)`);
      }
      if ((c === "'" || c === '"') && !this.quotedWord) this.beforeQuote = this.cur;
      if (c === "'") {
        const close = input.indexOf("'", this.i + 1);
        if (close < 0) throw new CommandError('unclosed single quote in the command');
        this.cur += input.slice(this.i + 1, close);
        this.inWord = true;
        this.quotedWord = true;
        this.i = close + 1;
        continue;
      }
      if (c === '"') {
        this.readDoubleQuoted();
        continue;
      }
      if (c === '\\') {
        if (this.i + 1 < input.length) this.cur += input[this.i + 1];
        this.inWord = true;
        this.i += 2;
        continue;
      }
      if (c === '$') {
        this.cur += this.readVar();
        this.inWord = true;
        continue;
      }
      if ((c === '*' || c === '?') && !this.quotedWord) {
        throw new CommandError(`the command uses the glob "${c}", which needs a shell; quote it or list the files`);
      }
      this.cur += c;
      this.inWord = true;
      this.i++;
    }
    this.endStep();
    return this.steps;
  }

  /** At the opening `"`: the quoted text into the current word (`\"`, `\\`, `\$`, `\`` escaped; `$` expanded). */
  private readDoubleQuoted(): void {
    const input = this.input;
    this.i++;
    this.inWord = true;
    this.quotedWord = true;
    for (;;) {
      if (this.i >= input.length) throw new CommandError('unclosed double quote in the command');
      const d = input[this.i]!;
      if (d === '"') {
        this.i++;
        return;
      }
      if (d === '\\' && this.i + 1 < input.length && '"\\$`'.includes(input[this.i + 1]!)) {
        this.cur += input[this.i + 1];
        this.i += 2;
        continue;
      }
      if (d === '`') throw new CommandError('backticks need a shell; Berth runs commands without one');
      if (d === '$') {
        this.cur += this.readVar();
        continue;
      }
      this.cur += d;
      this.i++;
    }
  }

  private expand(name: string): string {
    if (name in this.assigned) return this.assigned[name]!;
    for (let k = this.words.length - 1; k >= 0; k--) {
      const w = this.words[k]!;
      if (w.assign && w.text.startsWith(name + '=')) return w.text.slice(name.length + 1);
    }
    return this.env[name] ?? '';
  }

  private endWord(): void {
    if (this.inWord) {
      const assign = !this.words.some((w) => !w.assign) && /^[A-Za-z_][A-Za-z0-9_]*=/.test(this.beforeQuote ?? this.cur);
      this.words.push({ text: this.cur, quoted: this.quotedWord, assign });
    }
    this.cur = '';
    this.inWord = false;
    this.quotedWord = false;
    this.beforeQuote = null;
  }

  private endStep(): void {
    this.endWord();
    const stepEnv: Record<string, string> = {};
    const argv: string[] = [];
    for (const w of this.words) {
      if (w.assign && argv.length === 0) {
        const eq = w.text.indexOf('=');
        stepEnv[w.text.slice(0, eq)] = w.text.slice(eq + 1);
      } else argv.push(w.text);
    }
    if (argv.length === 0) throw new CommandError('a step of the command has no program to run');
    this.steps.push({ argv, env: stepEnv });
    this.words = [];
  }

  /** At a `$`: the expansion's value, moving past it. */
  private readVar(): string {
    const input = this.input;
    const i = this.i;
    if (input[i + 1] === '{') {
      const close = input.indexOf('}', i + 2);
      if (close < 0) throw new CommandError('unclosed ${ in the command');
      const inner = input.slice(i + 2, close);
      this.i = close + 1;
      // `${NAME}`, `${NAME:-default}` (the default when NAME is unset or empty) and
      // `${NAME:=default}` (the same, and NAME keeps the default for the rest of the command).
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?::([-=])(.*))?$/s.exec(inner);
      if (!m) throw new CommandError(`unsupported expansion \${${inner}} in the command (Berth expands \${NAME}, \${NAME:-default} and \${NAME:=default})`);
      const [, name, op, fallback] = m as unknown as [string, string, string | undefined, string | undefined];
      const value = this.expand(name);
      if (!op || value !== '') return value;
      if (/[$`\\]/.test(fallback ?? '')) throw new CommandError(`the default of \${${name}:${op}...} must be plain text`);
      if (op === '=') this.assigned[name] = fallback ?? '';
      return fallback ?? '';
    }
    if (input[i + 1] === '(') throw new CommandError('command substitution $( ) is not supported; write the steps with &&');
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(input.slice(i + 1));
    if (!m) {
      this.i += 1;
      return '$';
    }
    this.i += 1 + m[0].length;
    return this.expand(m[0]);
  }
}
