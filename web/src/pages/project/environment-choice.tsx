import { useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'wouter';
import { Field, Select } from '../../ui/controls';
import { environmentsQuery } from './previews-model';

export const PRODUCTION = 'production';
/** Every environment at once (the request log's `environment=*`). */
export const EVERY = '*';

/**
 * The environment a log page reads, kept in its address (`?environment=<name>`, absent for
 * production) so a preview's logs can be linked and survive a reload; and the setter.
 */
export function useEnvironmentParam(): [string, (name: string) => void] {
  const [params, setParams] = useSearchParams();
  const environment = params.get('environment') || PRODUCTION;
  return [environment, (name) => setParams(name === PRODUCTION ? {} : { environment: name }, { replace: true })];
}

/**
 * The Environment choice of the log pages: shown when the project has previews (or one is chosen);
 * `row`: in a row of controls of its own; `every`: with "All environments" first (the request log).
 */
export function EnvironmentChoice({ projectId, value, onChange, row, every }: { projectId: string; value: string; onChange(name: string): void; row?: boolean; every?: boolean }) {
  const envs = useQuery(environmentsQuery(projectId));
  const names = envs.data?.map((e) => e.name) ?? [PRODUCTION];
  if (names.length <= 1 && value === PRODUCTION) return null;
  const choices = [...(every ? [EVERY] : []), ...names];
  const choice = (
    <Field label="Environment">
      {(p) => (
        <Select {...p} value={value} onChange={(e) => onChange(e.target.value)}>
          {(choices.includes(value) ? choices : [...choices, value]).map((n) => (
            <option key={n} value={n}>
              {n === EVERY ? 'All environments' : n === PRODUCTION ? 'production' : `preview: ${n}`}
            </option>
          ))}
        </Select>
      )}
    </Field>
  );
  return row ? <div className="logs-controls">{choice}</div> : choice;
}
