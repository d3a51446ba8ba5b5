import { useId } from 'react';
import { messageOf } from '../../api/client';
import { Button, errorNames, Field, Select } from '../../ui/controls';
import { PERMISSIONS, RESOURCE_TYPES, typeLabel, useCatalog } from './org-api';

/** One grant being edited: a resource (type and id, `*` for all of the type) and its permissions. */
export interface GrantDraft {
  resourceType: string;
  resourceId: string;
  permissions: string[];
}

export const newDraft = (): GrantDraft => ({ resourceType: 'project', resourceId: '', permissions: ['read'] });

/** The body entry the API takes: permissions in level order. */
export function toEntry(d: GrantDraft): GrantDraft {
  return { resourceType: d.resourceType, resourceId: d.resourceId, permissions: PERMISSIONS.filter((p) => d.permissions.includes(p)) };
}

interface RowProps {
  draft: GrantDraft;
  /** The API's name of this entry's fields: `grants.0` in a list, '' for a single grant body. */
  path: string;
  error: unknown;
  index: number;
  onChange(d: GrantDraft): void;
  onRemove?(): void;
  /** The resource type and id cannot change (editing the permissions of an existing grant). */
  fixed?: boolean;
}

const nameOf = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** The resource options of a type: every resource of the org (`*`) and each one of its catalog. */
function ResourceSelect({ type, value, onChange, disabled, ...p }: { type: string; value: string; onChange(v: string): void; disabled?: boolean; id: string }) {
  const catalog = useCatalog(type);
  const entries = catalog.data ?? [];
  const only = type === 'audit' || type === 'billing';
  return (
    <Select {...p} value={value} disabled={disabled} onChange={(e) => onChange(e.target.value)}>
      {only ? null : <option value="">{catalog.isPending ? 'Loading…' : `Choose a ${typeLabel(type).toLowerCase()}`}</option>}
      <option value="*">{only ? `The whole ${typeLabel(type).toLowerCase()}` : `All, also future ones (*)`}</option>
      {entries.map((e) => (
        <option key={e.id} value={e.id}>
          {e.label}
          {typeof e.meta?.slug === 'string' && e.meta.slug !== e.label ? ` (${e.meta.slug})` : ''}
        </option>
      ))}
      {value && value !== '*' && !entries.some((e) => e.id === value) && !catalog.isPending ? <option value={value}>{value} (not in the catalog)</option> : null}
    </Select>
  );
}

/** One grant's controls: resource type, resource, permissions (checkboxes), remove. */
export function GrantRow({ draft, path, error, index, onChange, onRemove, fixed }: RowProps) {
  const permsId = useId();
  const permsName = nameOf(path, 'permissions');
  const permsError = errorNames(error, permsName);
  return (
    <div className="grant-row">
      <Field label="Resource type" name={nameOf(path, 'resourceType')} error={error}>
        {(p) => (
          <Select
            {...p}
            value={draft.resourceType}
            disabled={fixed}
            onChange={(e) => {
              const t = e.target.value;
              onChange({ ...draft, resourceType: t, resourceId: t === 'audit' || t === 'billing' ? '*' : '' });
            }}
          >
            {RESOURCE_TYPES.map((t) => (
              <option key={t.type} value={t.type}>
                {t.label}
              </option>
            ))}
          </Select>
        )}
      </Field>
      <Field label="Resource" name={nameOf(path, 'resourceId')} error={error}>
        {(p) => <ResourceSelect {...p} type={draft.resourceType} value={draft.resourceId} disabled={fixed} onChange={(resourceId) => onChange({ ...draft, resourceId })} />}
      </Field>
      <fieldset className="perms" aria-describedby={permsError ? `${permsId}-err` : undefined}>
        <legend>Permissions</legend>
        {PERMISSIONS.map((perm) => (
          <label key={perm}>
            <input
              type="checkbox"
              checked={draft.permissions.includes(perm)}
              onChange={(e) => onChange({ ...draft, permissions: e.target.checked ? [...draft.permissions, perm] : draft.permissions.filter((x) => x !== perm) })}
            />
            {perm}
          </label>
        ))}
      </fieldset>
      {onRemove ? (
        <Button small variant="ghost" className="remove" onClick={onRemove} aria-label={`Remove grant ${index + 1}`}>
          Remove
        </Button>
      ) : (
        <span />
      )}
      {permsError ? (
        <p className="field-error" id={`${permsId}-err`} role="alert">
          {messageOf(error)}
        </p>
      ) : null}
    </div>
  );
}

/** A list of grants being edited (an invitation's, or a member's whole set for PUT). */
export function GrantRows({ rows, onChange, error, path = 'grants', legend = 'Grants', empty }: { rows: GrantDraft[]; onChange(rows: GrantDraft[]): void; error: unknown; path?: string; legend?: string; empty?: string }) {
  return (
    <fieldset className="grant-rows">
      <legend>{legend}</legend>
      {rows.length === 0 && empty ? <p className="muted">{empty}</p> : null}
      {rows.map((d, i) => (
        <GrantRow
          key={i}
          index={i}
          draft={d}
          path={`${path}.${i}`}
          error={error}
          onChange={(next) => onChange(rows.map((r, j) => (j === i ? next : r)))}
          onRemove={() => onChange(rows.filter((_, j) => j !== i))}
        />
      ))}
      <Button small onClick={() => onChange([...rows, newDraft()])}>
        Add a grant
      </Button>
    </fieldset>
  );
}
