import { render } from 'preact'
import { App } from './App'
import { followLinksInPlace } from './router'
import './styles.css'

document.addEventListener('click', followLinksInPlace)
render(<App />, document.getElementById('app')!)
