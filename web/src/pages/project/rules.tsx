import type { PageProps } from '../../app';

export default function RulesPage(_: PageProps) {
  return <p className="muted">This page is being built.</p>;
}
