// Renders a todo list into a <ul>.
export function renderTodos(ul, todos) {
  ul.replaceChildren(...todos.map((t) => {
    const li = document.createElement('li');
    li.textContent = `${t.done ? '✔' : '○'} ${t.title}`;
    return li;
  }));
}
