/**
 * The API reference page (`/api/docs`): Redoc's standalone bundle renders `/api/openapi.json`.
 * The bundle is a node_modules file that Vite copies into the build as a content-hashed asset (no
 * CDN, nothing fetched from elsewhere); it is loaded as a same-origin classic script, which sets
 * `window.Redoc`, and started here (the page's CSP allows no inline script).
 */
import redocUrl from 'redoc/bundles/redoc.standalone.js?url';
import './api-docs.css';

interface RedocGlobal {
  init(specUrl: string, options: Record<string, unknown>, element: HTMLElement, callback?: (error?: unknown) => void): void;
}

const SPEC = '/api/openapi.json';

function fail(root: HTMLElement, message: string): void {
  const p = document.createElement('p');
  p.className = 'api-docs-error';
  p.setAttribute('role', 'alert');
  p.textContent = message;
  root.replaceChildren(p);
}

function start(root: HTMLElement): void {
  const redoc = (window as unknown as { Redoc?: RedocGlobal }).Redoc;
  if (!redoc) return fail(root, 'The API reference renderer did not load. The document itself is at /api/openapi.json.');
  redoc.init(
    SPEC,
    { expandResponses: '200,201,202', hideHostname: false, pathInMiddlePanel: true, sortTagsAlphabetically: true, jsonSampleExpandLevel: 3 },
    root,
    (error) => {
      if (error) fail(root, `Could not render ${SPEC}: ${error instanceof Error ? error.message : String(error)}`);
    },
  );
}

const root = document.getElementById('api-docs')!;
const script = document.createElement('script');
script.src = redocUrl;
script.addEventListener('load', () => start(root));
script.addEventListener('error', () => fail(root, 'The API reference renderer could not be loaded. The document itself is at /api/openapi.json.'));
document.head.append(script);
