import type { PageProps } from '../../app';

export default function SignupPage(_: PageProps) {
  return <p className="muted">This page is being built.</p>;
}
