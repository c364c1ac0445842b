// Demo module: calls the mock JSON routes and renders the answers.
import { renderTodos } from './todos.mjs';

const form = document.getElementById('hello');
const out = document.getElementById('hello-out');

async function hello(name) {
  const res = await fetch(`/api/hello/${encodeURIComponent(name)}`);
  out.textContent = `${res.status} ${JSON.stringify(await res.json())}`;
}

form.addEventListener('submit', (e) => {
  e.preventDefault();
  hello(new FormData(form).get('name'));
});

hello('world');
fetch('/api/todos').then((r) => r.json()).then((todos) => renderTodos(document.getElementById('todos'), todos));
