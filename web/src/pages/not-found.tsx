import { Link } from 'wouter';
import type { PageProps } from '../app';

export default function NotFoundPage(_: PageProps) {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        Nothing lives at <code>{window.location.pathname}</code>. <Link href="/">Go to your projects</Link>.
      </p>
    </>
  );
}
