import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app/App';
import './styles.css';

// urql aborts the fetch of a query nobody waits for any more (a page left
// before its data came); the aborted request's promise then rejects with
// nobody to hear it. That is the intended outcome, not an error.
window.addEventListener('unhandledrejection', (e) => {
  if ((e.reason as { name?: string } | null)?.name === 'AbortError') e.preventDefault();
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
