/** Vite's explicit URL import: the file is emitted as a content-hashed asset, and this is its URL. */
declare module '*?url' {
  const url: string;
  export default url;
}
